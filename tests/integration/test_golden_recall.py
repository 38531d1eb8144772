"""Golden recall (issue 16, item 4): the checked-in set, ranked lexically, semantically and
hybrid on a real SQLite store with the default embedder, through ``SearchService``.

The figures are recall@5 and MRR (``api/bench/recall.py``, also in ``lethe bench``); the
tests fail if hybrid recall@5 falls below the recorded baseline minus the margin, if
hybrid does not recall paraphrases at least 25 points better than lexical search, or if
it does worse than lexical search on exact-term queries.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lethe.api.bench import recall


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return recall.measure(Path(tmp_path_factory.mktemp("golden")))


def test_the_golden_set_has_the_size_and_kinds_of_query_the_issue_asks_for():
    doc = recall.golden_set()
    cats = Counter(q["category"] for q in doc["queries"])
    assert len(doc["memories"]) >= 200 and len(doc["queries"]) >= 100
    assert {"exact", "paraphrase", "negation", "distractor"} <= set(cats)
    assert {m["kind"] for m in doc["memories"]} == {"preference", "fact", "skill", "task_summary"}
    keys = {m["key"] for m in doc["memories"]}
    assert all(q["expected"] in keys for q in doc["queries"])


def test_hybrid_recall_at_5_holds_the_recorded_baseline(figures):
    hybrid = figures["recall"]["hybrid"]
    for category, floor in recall.BASELINE["hybrid"].items():
        assert hybrid[category]["recall_at_5"] >= floor - recall.MARGIN, (category, hybrid[category])


def test_hybrid_recalls_paraphrases_25_points_above_lexical_and_exact_terms_no_worse(figures):
    lexical, hybrid = figures["recall"]["lexical"], figures["recall"]["hybrid"]
    assert hybrid["paraphrase"]["recall_at_5"] >= lexical["paraphrase"]["recall_at_5"] + 0.25
    assert hybrid["exact"]["recall_at_5"] >= lexical["exact"]["recall_at_5"]
    assert hybrid["exact"]["mrr"] >= lexical["exact"]["mrr"]
