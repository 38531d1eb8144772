"""The web console at ``/console``: server-rendered pages for privacy officers, reviewers,
auditors and admins, over the same core services and the same access policy as the API.

No JavaScript and no asset from elsewhere: Jinja2 templates, plain HTML forms and one
stylesheet shipped in this package, so it works on a network with no internet. See
``api.console.app`` for how it is wired and ``docs/console.md`` for what each role sees.
"""
