"""Naming a subject counts once per window, however many requests name it at the same time."""

from __future__ import annotations

import pytest

from lethe.api.http.problems import ApiProblem
from lethe.api.http.subject_sweeps import SubjectSweeps
from lethe.vault.model import Caller, Role

AGENT = Caller("t1", Role.AGENT, agent_id="a1", purposes=frozenset({"support"}), principal="tok-1")


def sweeps(per_token: str = "3/minute") -> SubjectSweeps:
    return SubjectSweeps(per_token, "100/minute", lambda tenant: b"k" * 32)


def test_two_requests_racing_on_one_new_subject_are_both_served() -> None:
    s = sweeps()
    s.seen.admits = lambda key: True  # type: ignore[method-assign]  # both checked before either marked
    s.charge(AGENT, "alice")
    s.charge(AGENT, "alice")  # was a 429 "subject named is limited to 1/second"


def test_new_subjects_past_the_limit_are_refused_and_named_ones_are_free() -> None:
    s = sweeps()
    for subject in ("a", "b", "c"):
        s.charge(AGENT, subject)
    s.charge(AGENT, "a")  # named in the window: costs nothing
    with pytest.raises(ApiProblem) as refused:
        s.charge(AGENT, "d")
    assert refused.value.status == 429
