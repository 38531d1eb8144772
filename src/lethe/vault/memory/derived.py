"""What was built from what: the summaries that cite a set of memories, transitively.

A summary's ``provenance.sources`` names what it was built from: memory ids of its own
tenant (another tenant's memory under the same id is a different memory), checked at the
write (``memory.summaries``); one written before that check may also hold the ref of an
outside source it cites directly. Removing a memory, by erasure or by
retraction, must remove what was built from it and what was built from that, or the
claim outlives its own source ("survival by summary"). ``derived_from`` walks the
citations to a fixed point; erasure (``erasure.forgetting``) and retraction
(``memory.retraction``) both use it, each with its own idea of what is already gone.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable

from sqlalchemy.engine import Connection

from lethe.vault.memory import repository as repo


def derived_from(
    conn: Connection,
    tenant_id: str,
    roots: Iterable[str],
    *,
    skip: Collection[str],
    purpose: str | None = None,
    agent_id: str | None = None,
    after_seq: int | None = None,
) -> list[repo.Row]:
    """The tenant's summaries citing any of ``roots``, directly or through other summaries.

    Sorted by id; the roots themselves are never in it. A summary in a ``skip`` status is
    walked through (what cites it is still derived) but not returned: it is already gone.
    Rows carry id, provenance, version, subject_ref and status. ``purpose`` and
    ``agent_id`` narrow the walk to one scope: a summary checked at its write
    (``memory.summaries``) cites only memories its writer reads in its own purpose, so what
    cites an agent's memory is that agent's, in that purpose (what cites an operator
    memory, any agent's in that purpose: give no ``agent_id``). ``after_seq``: the lowest
    ``created_seq`` of the roots, if known; what cites a memory was written after it.
    """
    gone = set(roots)
    cites = [
        (s, set(json.loads(s.provenance).get("sources") or ()))
        for s in repo.summaries(conn, tenant_id, purpose, agent_id, after_seq)
    ]
    found: list[repo.Row] = []
    changed = True
    while changed:
        changed = False
        for s, sources in cites:
            if s.id not in gone and sources & gone:
                gone.add(s.id)
                changed = True
                if s.status not in skip:
                    found.append(s)
    return sorted(found, key=lambda s: s.id)
