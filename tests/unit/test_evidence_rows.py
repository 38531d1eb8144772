"""Evidence as labelled rows in words (``vault.oversight.evidence_rows``)."""

from __future__ import annotations

from lethe.vault.oversight.evidence_rows import EvidenceRow, evidence_rows


def test_scalars_read_as_words_and_pairs_as_before_and_after() -> None:
    rows = evidence_rows(
        {
            "memories_forgotten": 1200,
            "index_entries_before": 3,
            "index_entries_after": 0,
            "erasure_fence": True,
            "pending_until": None,
            "destroyed_at": "2026-12-07T15:24:17.960464+00:00",
        }
    )
    assert rows == [
        EvidenceRow("Memories forgotten", "1,200"),
        EvidenceRow("Search index entries", "3 → 0"),
        EvidenceRow("Erasure fence up", "yes"),
        EvidenceRow("Destruction scheduled for", "none"),
        EvidenceRow("Destroyed at", "2026-12-07 15:24:17 UTC"),
    ]


def test_receipts_copies_and_unknown_keys_become_nested_rows_never_reprs() -> None:
    rows = evidence_rows(
        {
            "receipts": [{"generation": 2, "key_unusable": True, "details": {"files_scanned": ["a", "b"]}}],
            "key_copies": {
                "copies": [{"copy": "wrapped data keys in the store", "count": 1, "fate": "kept"}]
            },
            "a_new_fact": {"inner_flag": False},
        }
    )
    assert EvidenceRow("Key generation 2", "", 1) in rows
    assert EvidenceRow("Key unusable", "yes", 2) in rows
    assert EvidenceRow("Files scanned", "a, b", 3) in rows
    assert EvidenceRow("Wrapped data keys in the store", "1: kept", 1) in rows
    assert EvidenceRow("A new fact", "", 0) in rows and EvidenceRow("Inner flag", "no", 1) in rows
    text = " ".join(f"{r.label} {r.value}" for r in rows)
    assert "{" not in text and "True" not in text and "None" not in text
