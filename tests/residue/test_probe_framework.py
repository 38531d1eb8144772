"""The residue suite's own rules, without a server: a control that finds nothing is a miss, what
comes back after is counted, both runs must ask the same questions, and markers match the
subject's traces in any case or compatibility form."""

from __future__ import annotations

import pytest

from tests.residue.probes import Markers, Outcome, Skipped, tally
from tests.residue.report import BEGIN, END, render

MK = Markers(frozenset({"6672d21d-cd28"}), ("Zoë Ångström", "7731-4409"))


def outcomes(**found: list[str]) -> dict[tuple[str, str], Outcome]:
    return {("search", name): Outcome("search", name, hits) for name, hits in found.items()}


def test_a_control_that_finds_nothing_is_a_miss_and_what_comes_back_is_a_residue() -> None:
    before = outcomes(exact=["Zoë Ångström"], blind=[])
    after = outcomes(exact=["7731-4409"], blind=[])
    f = tally("sqlite", before, after, [Skipped("traces", "not built")])
    assert f.misses == ["search / blind"]
    assert f.residues == ["search / exact: 7731-4409"]
    assert f.surfaces == {"search": [2, 1, 1]} and (f.probes, f.hits, f.residue_count) == (2, 1, 1)


def test_both_runs_must_ask_the_same_questions() -> None:
    with pytest.raises(AssertionError):
        tally("sqlite", outcomes(exact=["x"]), outcomes(other=[]), [])


def test_markers_match_other_cases_and_compatibility_forms_but_not_other_text() -> None:
    assert MK.in_text("ＺＯË ÅNGSTRÖM lives here") == ["Zoë Ångström"]
    assert MK.in_text("Zoe\u0308 A\u030angstro\u0308m") == ["Zoë Ångström"]
    assert MK.in_items([{"id": "6672D21D-CD28"}, {"content": "Bo Lindqvist"}]) == ["6672d21d-cd28"]
    assert MK.content_only().in_text("6672d21d-cd28") == []


def test_the_doc_block_holds_the_figures_and_its_data() -> None:
    f = tally("sqlite", outcomes(exact=["x"]), outcomes(exact=[]), [])
    block = render({"sqlite": {**f.as_json(), "date": "2026-12-07 18:00 UTC", "workers": 2}})
    assert block.startswith(BEGIN) and block.endswith(END)
    assert "1 probes, 1 hit the subject in their control run, **0 residues**" in block
    assert "| search | 1 / 1 / 0 |" in block
