"""Time in one place: aware UTC for the domain, naive UTC for database columns."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_db(dt: datetime) -> datetime:
    """Columns store naive UTC so SQLite and PostgreSQL compare the same way."""
    if dt.tzinfo is None:
        return dt
    return dt.astimezone(UTC).replace(tzinfo=None)


def from_db(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def iso(dt: datetime) -> str:
    """A fixed-width ISO-8601 UTC timestamp, stable byte for byte (it is hashed)."""
    return from_db(dt).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def db_time(text: str) -> datetime:
    """``to_db(parse_iso(text))``, without converting text that is UTC already (as ``iso``
    writes it): replay converts three per memory."""
    dt = datetime.fromisoformat(text)
    return dt.replace(tzinfo=None) if dt.tzinfo is UTC else to_db(parse_iso(text))
