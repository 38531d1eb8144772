"""Signed webhooks: the outbox, subscriptions and their delivery (``docs/integrations.md``)."""
