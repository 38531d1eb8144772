"""Opened search results kept with a kept scope, so that a search of a scope that did not
change neither reads nor opens its results again.

A kept scope (``memory.ranked_scope``) is served only while the scope's change token, read
by the search's first statement, is the one it was read under; every event that changes a
memory of the scope, and every key marked destroyed in its tenant, writes a new token in
the same transaction (``store.scope_changes``). The results a search opened from the
scope's own memories are as valid as the scope's columns under that token, so they are
kept with it and served to the next searches that read the same token: their rows are
not read again and their ciphertext is not opened again. What this relies on:
- Only the agent's own memories of the scope are kept. The operator memories a search
  returns are not covered by the scope's token and are read and opened every time.
- A result is read after the token in the same transaction, so its state is the token's
  or newer; if newer, the token has changed already and the scope is never served again.
- Expiry is applied by the ranking against the search's ``now``, as for the columns.
- Plaintext stays in this process's memory only, with the scope: dropped when the scope is
  (replaced, evicted, past the TTL of the vectors it holds, within one sweep even in an
  idle process, or one of its keys revoked or found gone: ``custody.opened_vectors``,
  ``custody.plaintext_expiry``), never written, logged or shared.
Which and how many: an item is kept the second time a search of the scope opens it (the
results searches return again and again, not every one returned once), within
``KEPT_BYTES_PER_ROW`` times the scope's rows, counting each item's content, subject id and
sealed origin (``Provenance.origin``) and ``ITEM_OVERHEAD``; past it, results are read and
opened by each search as before. A worker keeps at most ``max_vectors`` rows in its kept
scopes (40,000 by default), so at most about 15 MB of kept results, however many scopes; a
scope of a few rows keeps few or none (its second statement reads a few rows). On figure 6's
queries (two random words of the bench vocabulary, limit 10) a 1,000-row scope keeps about
350 items (350 KB); in 2,000 searches spread over four such scopes they served 71 % of the
last 1,000's results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from lethe.vault.model import MemoryItem

KEPT_BYTES_PER_ROW = 384
ITEM_OVERHEAD = 1024  # what a kept item costs besides its text (a bench item: about 1,000 bytes in all)


class KeptResults:
    """The opened items of one kept scope's own memories, without scores (see the module).
    Shared by the searches of every thread: an item is added whole (a dict's item set is
    atomic), and two searches adding at once may pass the bound by one item each. The
    items are tuples of their fields, the strings every item of the scope repeats held once."""

    def __init__(self, members: Mapping[str, int]) -> None:
        self._members = members  # the scope's memory id -> row: nothing else is kept
        self._items: dict[str, tuple[Any, ...]] = {}  # memory id -> its item's fields but the score
        self._size = 0
        self._bound = KEPT_BYTES_PER_ROW * len(members)
        self._seen = bytearray(len(members))  # a row opened once: kept when opened again
        self._strings: dict[str, str] = {}  # one copy of the scope's tenant, agent, purpose, subjects

    def get(self, memory_id: str, score: dict[str, float] | None) -> MemoryItem | None:
        """The kept item with this search's score, or None if none is kept."""
        fields = self._items.get(memory_id)
        return None if fields is None else MemoryItem(*fields, score=score)

    def add(self, items: Iterable[MemoryItem]) -> None:
        """Keep these opened items, those of the scope's own memories, within the bound."""
        for item in items:
            row = self._members.get(item.id)
            if row is None or item.id in self._items:
                continue
            if not self._seen[row]:
                self._seen[row] = 1
                continue
            size = ITEM_OVERHEAD + len(item.content or "") + len(item.subject_id or "")
            size += sum(map(len, item.provenance.origin().values()))  # opened from the envelope too
            if self._size + size > self._bound:
                return
            one = self._strings.setdefault
            fields = [getattr(item, name) for name in _FIELDS]
            for i in _SHARED:
                fields[i] = one(fields[i], fields[i])
            self._items[item.id] = tuple(fields)
            self._size += size

    def __len__(self) -> int:
        return len(self._items)


# Every field but the last, the score, in order: a tuple of them costs a fifth of a dict.
_FIELDS = [f.name for f in dataclasses.fields(MemoryItem)]
assert _FIELDS[-1] == "score"
_FIELDS.pop()
_SHARED = [_FIELDS.index(name) for name in ("tenant_id", "agent_id", "subject_ref", "purpose")]
