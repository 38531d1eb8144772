"""How LangGraph's namespaces, keys, values and TTLs map onto Lethe memories.

- Namespace ``(subject_id, kind)``: the person the item is about and a Lethe kind
  (``preference``, ``fact``, ``skill``, ``task_summary``, ``working_note``). The tenant,
  the agent and the purpose are not in the namespace: they are the token's and the
  store's (``purpose=``). A namespace of another shape, or an unknown kind, is refused
  (``InvalidNamespaceError``): the mapping cannot carry it. LangGraph itself forbids
  ``.`` in labels, so subject ids such as e-mail addresses need another spelling.
- Key: inside the memory's encrypted content, with the value. The memory id is a keyed
  hash (HMAC-SHA256 under the store's ``id_key``) of agent, purpose, subject, kind and
  key: the same key finds the same memory, and ids left behind after an erasure cannot
  be linked back to a subject id by anyone without the key.
- Value: the memory's content is the JSON envelope ``{"lethe_store": 1, "key", "value",
  "updated_at"}``. Deleting retracts the memory (``LetheStore``); a tombstone version
  (``"deleted": true``), which stores before that wrote on delete, still reads as absent.
  Memories the agent wrote by other means read as ``{"content": <text>}`` under their
  memory id.
- TTL (minutes) becomes the memory's ``ttl_seconds`` (rounded up to a second); without
  one Lethe gives the kind's default. Lethe does not extend a TTL on reads.

Exceptions: ``InvalidNamespaceError`` for a namespace the mapping cannot carry.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import InvalidNamespaceError, MatchCondition

KINDS = ("preference", "fact", "skill", "task_summary", "working_note")
ENVELOPE = "lethe_store"
NO_TERMS = "*"  # a query with no terms: Lethe ranks by confidence and recency alone


@dataclass(frozen=True)
class Place:
    """A namespace in Lethe's terms."""

    subject_id: str
    kind: str


def place_of(namespace: Sequence[str]) -> Place:
    if len(namespace) != 2 or namespace[1] not in KINDS or not namespace[0]:
        raise InvalidNamespaceError(
            f"a Lethe namespace is (subject_id, kind) with kind one of {', '.join(KINDS)}"
        )
    return Place(unicodedata.normalize("NFC", namespace[0]), namespace[1])


def search_scope(prefix: Sequence[str]) -> tuple[str | None, list[str]]:
    """(subject_id, kinds) for a search prefix: (), (subject_id,) or (subject_id, kind)."""
    if len(prefix) == 0:
        return None, []
    if len(prefix) == 1:
        return unicodedata.normalize("NFC", prefix[0]), []
    place = place_of(prefix)
    return place.subject_id, [place.kind]


def memory_id(id_key: bytes, agent_id: str, purpose: str, place: Place, key: str) -> str:
    """The memory id of a key: a UUID (version 8) from HMAC-SHA256 under the store's id key."""
    message = "\x1f".join(("lethe-store-v1", agent_id, purpose, place.subject_id, place.kind, key))
    raw = bytearray(hmac.new(id_key, message.encode(), hashlib.sha256).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


def envelope(key: str, value: Mapping[str, Any] | None, now: datetime) -> str:
    body: dict[str, Any] = {ENVELOPE: 1, "key": key, "updated_at": now.isoformat()}
    if value is None:
        body["deleted"] = True
    else:
        body["value"] = dict(value)
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Opened:
    key: str
    value: dict[str, Any] | None  # None: a tombstone
    updated_at: datetime | None


def open_content(memory_id: str, content: str | None) -> Opened:
    """The key and value a memory holds (a memory written without the store: its text)."""
    try:
        body = json.loads(content or "")
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get(ENVELOPE) != 1 or not isinstance(body.get("key"), str):
        return Opened(memory_id, {"content": content}, None)
    updated = body.get("updated_at")
    when = datetime.fromisoformat(updated) if isinstance(updated, str) else None
    return Opened(body["key"], None if body.get("deleted") else body.get("value"), when)


def ttl_seconds(ttl_minutes: float | None) -> int | None:
    return None if ttl_minutes is None else max(1, math.ceil(ttl_minutes * 60))


def now() -> datetime:
    return datetime.now(UTC)


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter semantics: exact values, nested objects, $eq $ne $gt $gte $lt $lte."""
    return not filter or all(_compare(value.get(k), v) for k, v in filter.items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(actual, op, v) for op, v in wanted.items())
        return isinstance(actual, dict) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return actual == wanted


def _operator(actual: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return actual == wanted
    if op == "$ne":
        return actual != wanted
    comparisons = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    if op not in comparisons:
        raise ValueError(f"unsupported filter operator {op}")
    try:
        return comparisons[op](float(actual), float(wanted))
    except (TypeError, ValueError):
        return False


def namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)
