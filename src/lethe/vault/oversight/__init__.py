"""Oversight: what the erasure record proves to others, above the erasure floor.

The certificate issuers (per-request and final), the KPIs read model, and the renderings of
certificates and subject access exports. They read erasure's jobs and steps and the audit log;
nothing below imports them (``tests/unit/test_dependency_direction.py`` pins the floors).
"""
