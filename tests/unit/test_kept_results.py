"""The opened results a kept scope keeps: its own memories only, opened twice, within a
bound of bytes."""

from __future__ import annotations

from datetime import UTC, datetime

from lethe.vault.memory import kept_results
from lethe.vault.memory.kept_results import KeptResults
from lethe.vault.model import Authority, Kind, MemoryItem, Provenance, SourceType, Status, Trust

NOW = datetime(2026, 12, 6, tzinfo=UTC)
FOUR = {f"m{i}": i - 1 for i in range(1, 5)}  # a scope of four rows: room for one item


def item(memory_id: str, content: str = "Alice prefers green tea") -> MemoryItem:
    return MemoryItem(
        id=memory_id,
        tenant_id="t1",
        agent_id="a1",
        subject_ref="".join(["subject-", "ref"]),  # a new string each time, as the driver makes
        subject_id="alice@example.com",
        purpose="".join(["sup", "port"]),
        kind=Kind.PREFERENCE,
        content=content,
        content_hmac="h",
        provenance=Provenance(SourceType.USER_STATEMENT, "s/1"),
        authority=Authority.USER,
        trust=Trust.VERIFIED,
        confidence=0.9,
        created_at=NOW,
        expires_at=NOW,
        version=1,
        status=Status.ACTIVE,
        supersedes_id=None,
        idempotency_key="k",
        score={"total": 1.0},
    )


def test_a_kept_item_comes_back_whole_with_the_score_of_the_search_that_asks():
    kept = KeptResults(FOUR)
    kept.add([item("m1")])
    assert kept.get("m1", None) is None  # opened once: noted, not kept
    kept.add([item("m1")])
    back = kept.get("m1", {"total": 0.5})
    assert back == item("m1").__class__(**{**vars(item("m1")), "score": {"total": 0.5}})
    assert kept.get("m2", None) is None


def test_only_the_scopes_own_memories_are_kept():
    kept = KeptResults(FOUR)
    for _ in range(2):
        kept.add([item("m1"), item("operator-fact")])
    assert len(kept) == 1 and kept.get("operator-fact", None) is None


def test_results_past_the_bound_are_not_kept():
    rows = 20
    bound = kept_results.KEPT_BYTES_PER_ROW * rows
    content = "x" * 2_000
    per_item = kept_results.ITEM_OVERHEAD + len(content) + len("alice@example.com")
    ids = {f"m{i}": i for i in range(rows)}
    kept = KeptResults(ids)
    for _ in range(2):
        kept.add([item(m, content) for m in ids])
    assert len(kept) == bound // per_item < len(ids)


def test_items_of_one_scope_share_one_copy_of_the_strings_they_repeat():
    kept = KeptResults({f"m{i}": i - 1 for i in range(1, 21)})
    for _ in range(2):
        kept.add([item("m1"), item("m2")])
    one, two = kept.get("m1", None), kept.get("m2", None)
    assert one is not None and two is not None and one.tenant_id == two.tenant_id == "t1"
    assert one.subject_ref is two.subject_ref and one.purpose is two.purpose
