"""The HTTP way in (FastAPI): app, authentication, problems, metrics, schemas, routes."""
