"""Synthetic data through the real bulk import path, for benchmarks and scale tests.

Every memory is validated, encrypted under its subject's key and recorded as an event
exactly like a normal write; only the transaction batching differs.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

from lethe.vault.memory.service import MemoryService
from lethe.vault.model import Caller, Provenance, Role, SourceType, WriteCommand

WORDS = (
    "tea",
    "coffee",
    "paris",
    "berlin",
    "allergy",
    "meeting",
    "invoice",
    "flight",
    "hotel",
    "birthday",
    "gluten",
    "vegan",
    "python",
    "rust",
    "budget",
    "deadline",
    "project",
    "garden",
    "piano",
    "running",
    "cycling",
    "music",
)


def bulk_load(
    memories: MemoryService,
    tenants: int,
    subjects_per_tenant: int,
    memories_per_subject: int,
    batch: int = 5000,
    agent_id: str = "agent-1",
    purpose: str = "support",
    seed: int = 7,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write tenants x subjects x memories items (tenants ``bulk-t<i>``, subjects ``subject-<j>``)."""
    rng = random.Random(seed)
    total = 0
    for t in range(tenants):
        caller = Caller(f"bulk-t{t}", Role.AGENT, agent_id, frozenset({purpose}), principal="bulk-loader")
        pending: list[WriteCommand] = []
        for s in range(subjects_per_tenant):
            for i in range(memories_per_subject):
                pending.append(
                    WriteCommand(
                        subject_id=f"subject-{s}",
                        purpose=purpose,
                        kind="fact",
                        content=f"{' '.join(rng.choices(WORDS, k=8))} #{i}",
                        provenance=Provenance(SourceType.USER_STATEMENT, f"bulk/{t}/{s}/{i}"),
                        idempotency_key=uuid.uuid4().hex,
                        confidence=round(rng.random(), 3),
                    )
                )
                if len(pending) == batch:
                    total += memories.import_batch(caller, pending)
                    pending = []
                    if progress:
                        progress(total)
        if pending:
            total += memories.import_batch(caller, pending)
            if progress:
                progress(total)
    return total
