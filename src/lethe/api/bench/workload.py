"""What the bench writes and who writes it: memories like those of ``vault.memory.bulk``
(its vocabulary, the kind and source type of the core's enums), the callers, the bulk loads.

Every generated store reads alike, so the figures measure the same kind of data.
"""

from __future__ import annotations

import random
import uuid

from lethe.api.bench.scales import AGENT_ID, PURPOSE
from lethe.vault.memory.bulk import WORDS
from lethe.vault.memory.service import MemoryService
from lethe.vault.model import Caller, Kind, Provenance, Role, SourceType, WriteCommand

LEGAL_BASIS = "gdpr-art17-1a"  # of every erasure request the bench files
REFERENCE = "BENCH"


def write_command(rng: random.Random, subject: str, ref: str, words: int = 8) -> WriteCommand:
    """One memory like those of ``vault.memory.bulk``: eight words from its vocabulary."""
    return WriteCommand(
        subject_id=subject,
        purpose=PURPOSE,
        kind=Kind.FACT.value,  # a plain str as callers send it; an enum takes canonical_json's slow path
        content=f"{' '.join(rng.choices(WORDS, k=words))} #{ref}",
        provenance=Provenance(SourceType.USER_STATEMENT, f"bench/{ref}"),
        idempotency_key=uuid.uuid4().hex,
        confidence=round(rng.random(), 3),
    )


def query_words(rng: random.Random) -> str:
    """A two-word search query from the same vocabulary."""
    return " ".join(rng.sample(WORDS, 2))


def agent_caller(tenant: str) -> Caller:
    """The agent of every bench scope: ``AGENT_ID`` with the one purpose ``PURPOSE``."""
    return Caller(tenant, Role.AGENT, AGENT_ID, frozenset({PURPOSE}), principal="bench")


def officer_caller(tenant: str) -> Caller:
    """The privacy officer who files the bench's erasure requests."""
    return Caller(tenant, Role.PRIVACY_OFFICER, None, frozenset(), principal="bench")


def load_subjects(
    memories: MemoryService,
    tenant: str,
    subjects: list[str],
    per_subject: int,
    rng: random.Random,
    batch: int = 5000,
) -> int:
    """Import ``per_subject`` memories for each subject of ``tenant`` through the bulk path."""
    caller = agent_caller(tenant)
    total, pending = 0, []
    for s in subjects:
        for i in range(per_subject):
            pending.append(write_command(rng, s, f"{tenant}/{s}/{i}"))
            if len(pending) == batch:
                total += memories.import_batch(caller, pending)
                pending = []
    if pending:
        total += memories.import_batch(caller, pending)
    return total


def warm_subjects(memories: MemoryService, caller: Caller, rng: random.Random, n: int = 10) -> list[str]:
    """``n`` subjects, each written once so its key exists before anything is timed."""
    subjects = [f"subject-{i}" for i in range(n)]
    for sub in subjects:
        memories.write(caller, write_command(rng, sub, f"warm/{sub}"))
    return subjects
