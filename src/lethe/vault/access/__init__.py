"""Credentials: API tokens, stored hashed, turned into a Caller."""
