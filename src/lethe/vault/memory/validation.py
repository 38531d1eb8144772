"""Checks a write command before anything is encrypted or stored.

Each failure is its own exception type with a message that names the field and the
rule, never the content. Numbers are bounded before they are used: a version must fit
the store's 32-bit column (and the request hash's canonical JSON), and a TTL is compared
with the kind's maximum before a ``timedelta`` is built, which would overflow.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from lethe.vault.audit.certificate_format import fold_subject_id
from lethe.vault.errors import (
    ContentTooLarge,
    InvalidCommand,
    InvalidConfidence,
    InvalidPurpose,
    InvalidTtl,
    MissingProvenance,
    UnknownKind,
)
from lethe.vault.model import Kind, Provenance, SourceType, WriteCommand
from lethe.vault.policy import Limits

_PURPOSE = re.compile(r"^[a-z0-9][a-z0-9_.:-]*$")
MAX_VERSION = 2**31 - 1  # versions are 32-bit integers in the store


@dataclass(frozen=True)
class ValidWrite:
    kind: Kind
    source_type: SourceType
    expires_at: datetime


def require_text(field: str, value: object, max_len: int, *, required: bool = True) -> None:
    """Strings the stores can hold: PostgreSQL refuses NUL, and no field needs it."""
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidCommand(f"{field} is required")
    if len(value) > max_len:
        raise InvalidCommand(f"{field} is at most {max_len} characters")
    if "\x00" in value:
        raise InvalidCommand(f"{field} must not contain NUL characters")


SUBJECT_ID_MAX = 256


def normal_subject_id(value: object) -> str:
    """The subject id as Lethe keys it: default-ignorable code points removed, Unicode NFC,
    never case-folded.

    "José" typed on one system and "Jose\u0301" sent by another are the same person, and
    so are "alice-x" and "alice\u200b-x" (a zero-width space, invisible wherever the id is
    shown), so every subject id is folded before it becomes a ``subject_ref``, a sealed
    envelope or a certificate commitment. Case is kept: identifiers such as opaque user ids
    are case-sensitive in many systems, and folding them could merge two people.
    """
    require_text("subject_id", value, SUBJECT_ID_MAX * 4)
    assert isinstance(value, str)
    normal = fold_subject_id(value)
    if not normal.strip():
        raise InvalidCommand("subject_id is required")
    if len(normal) > SUBJECT_ID_MAX:
        raise InvalidCommand(f"subject_id is at most {SUBJECT_ID_MAX} characters")
    return normal


def require_version(field: str, value: object) -> None:
    """A version the store can hold: a whole number from 0 to ``MAX_VERSION`` (bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_VERSION:
        raise InvalidCommand(f"{field} must be a whole number from 0 to {MAX_VERSION}")


def validate_write(cmd: WriteCommand, limits: Limits, now: datetime) -> ValidWrite:
    for field, value, max_len in (
        ("subject_id", cmd.subject_id, 256),
        ("content", cmd.content, 10**9),
        ("idempotency_key", cmd.idempotency_key, 128),
    ):
        require_text(field, value, max_len)
    try:
        kind = Kind(cmd.kind)
    except ValueError:
        raise UnknownKind(f"unknown kind {cmd.kind!r}; expected one of {[k.value for k in Kind]}") from None
    prov = cmd.provenance
    if prov is None or not prov.source_ref or not str(prov.source_ref).strip():
        raise MissingProvenance("provenance with source_type and source_ref is required")
    try:
        source_type = SourceType(prov.source_type)
    except ValueError:
        raise MissingProvenance(
            f"unknown provenance source_type; expected one of {[s.value for s in SourceType]}"
        ) from None
    require_text("provenance.source_ref", prov.source_ref, limits.max_ref_len)
    _check_origin(prov, source_type, limits)
    for source in prov.sources:
        require_text("provenance.sources[]", source, limits.max_ref_len)
    if prov.origins is not None:  # what a summary inherits is the vault's record (``memory.summaries``)
        raise InvalidCommand("provenance.origins is recorded by the vault, never given by a writer")
    if source_type is SourceType.SUMMARY and not prov.sources:
        raise MissingProvenance("a summary must list the memory ids it was built from in provenance.sources")
    # Whether those ids are live memories the writer may cite is checked under the write lock
    # (``memory.summaries``); a source that is not a memory's id is refused there too.
    if not cmd.purpose or len(cmd.purpose) > limits.max_purpose_len or not _PURPOSE.match(cmd.purpose):
        raise InvalidPurpose("purpose must be 1-64 characters of a-z, 0-9, '_', '.', ':' or '-'")
    if not cmd.subject_id or len(cmd.subject_id) > 256:
        raise InvalidCommand("subject_id is required (at most 256 characters)")
    if not cmd.idempotency_key or len(cmd.idempotency_key) > 128:
        raise InvalidCommand("an idempotency key (1-128 characters) is required")
    conf = cmd.confidence
    if (
        isinstance(conf, bool)
        or not isinstance(conf, int | float)
        or not 0 <= conf <= 1  # first: isfinite() overflows on a huge int
        or not math.isfinite(conf)
    ):
        raise InvalidConfidence("confidence must be a number between 0 and 1")
    if not isinstance(cmd.content, str) or not cmd.content:
        raise InvalidCommand("content must be a non-empty string")
    size = len(cmd.content.encode())
    if size > limits.max_content_bytes:
        raise ContentTooLarge(f"content is {size} bytes; the limit is {limits.max_content_bytes}")
    require_version("expected_version", cmd.expected_version)
    default_ttl, max_ttl = limits.window(kind, source_type)
    if cmd.expires_at is not None and cmd.ttl_seconds is not None:
        raise InvalidTtl("give expires_at or ttl_seconds, not both")
    if cmd.ttl_seconds is not None:
        seconds = cmd.ttl_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds != seconds:  # NaN
            raise InvalidTtl("ttl_seconds must be a number of seconds")
        if seconds <= 0:
            raise InvalidTtl("ttl_seconds must be positive")
        if seconds > max_ttl.total_seconds():  # checked before timedelta(), which would overflow
            raise InvalidTtl(_too_long(kind, source_type, max_ttl))
        ttl = timedelta(seconds=seconds)
    elif cmd.expires_at is not None:
        if cmd.expires_at.tzinfo is None:
            raise InvalidTtl("expires_at must carry a time zone")
        ttl = cmd.expires_at - now
        if ttl <= timedelta(0):
            raise InvalidTtl("expires_at is in the past")
    else:
        ttl = default_ttl
    if ttl > max_ttl:
        raise InvalidTtl(_too_long(kind, source_type, max_ttl))
    return ValidWrite(kind, source_type, now + ttl)


MAX_URL = 2048  # what browsers and proxies reliably carry


def _check_origin(prov: Provenance, source_type: SourceType, limits: Limits) -> None:
    """The structured origin fields: bounded strings; a ``web_page`` must name its page by an
    absolute http(s) URL. Messages name the field and the rule, never the value (it is sealed)."""
    for field in ("turn", "tool", "document_ref"):
        require_text(f"provenance.{field}", getattr(prov, field), limits.max_ref_len, required=False)
    url = prov.url
    if url is None:
        if source_type is SourceType.WEB_PAGE:
            raise MissingProvenance("a web_page memory must give its page as provenance.url")
        return
    require_text("provenance.url", url, MAX_URL)
    assert isinstance(url, str)
    if not _is_web_url(url):
        raise InvalidCommand("provenance.url must be an absolute http or https URL with a host")


def _is_web_url(url: str) -> bool:
    if any(c.isspace() or unicodedata.category(c) == "Cc" for c in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _too_long(kind: Kind, source_type: SourceType, max_ttl: timedelta) -> str:
    return (
        f"expiry exceeds the maximum for kind {kind.value} from source {source_type.value} "
        f"({max_ttl.days} days; only a reviewer's confirmation keeps a memory longer)"
    )
