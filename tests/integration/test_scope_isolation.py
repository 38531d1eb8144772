"""Isolation as a property: no read or search ever crosses the caller's scope."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lethe.vault import errors
from lethe.vault.model import SearchQuery
from tests.conftest import agent, write_cmd

TENANTS, AGENTS, PURPOSES, SUBJECTS = ["t1", "t2", "t3"], ["a1", "a2"], ["p1", "p2"], ["s1", "s2", "s3"]
WORDS = ["tea", "coffee", "paris", "berlin", "allergy", "meeting"]

writes = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.sampled_from(AGENTS),
        st.sampled_from(PURPOSES),
        st.sampled_from(SUBJECTS),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=8,
)
callers = st.tuples(
    st.sampled_from(TENANTS), st.sampled_from(AGENTS), st.sets(st.sampled_from(PURPOSES), min_size=1)
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    writes=writes,
    caller_spec=callers,
    subject=st.none() | st.sampled_from(SUBJECTS),
    query=st.sampled_from(WORDS),
)
def test_no_search_or_read_returns_an_item_outside_the_callers_scope(
    lethe, writes, caller_spec, subject, query
):
    run = uuid.uuid4().hex[:8]  # examples share one database; keep each example's data apart
    written = []
    for tenant, agent_id, purpose, subj, words in writes:
        item = lethe.memories.write(
            agent(f"{tenant}-{run}", agent_id, (purpose,)),
            write_cmd(" ".join(words), subject=f"{subj}-{run}", purpose=purpose),
        ).item
        written.append((item, tenant, agent_id, purpose, subj))
    tenant, agent_id, purposes = caller_spec
    caller = agent(f"{tenant}-{run}", agent_id, tuple(purposes))
    for purpose in purposes:
        result = lethe.search.search(
            caller,
            SearchQuery(
                query=query,
                purpose=purpose,
                subject_id=f"{subject}-{run}" if subject else None,
                limit=100,
                token_budget=100_000,
            ),
        )
        expected = {
            i.id
            for i, t, a, p, s in written
            if (t, a, p) == (tenant, agent_id, purpose) and subject in (None, s)
        }
        assert {i.id for i in result.items} == expected
    for item, t, a, p, _ in written:
        if (t, a) == (tenant, agent_id) and p in purposes:
            assert lethe.memories.get(caller, item.id).id == item.id
        else:
            with pytest.raises(errors.NotFound):
                lethe.memories.get(caller, item.id)
    for purpose in set(PURPOSES) - purposes:
        with pytest.raises(errors.OutOfScope):
            lethe.search.search(caller, SearchQuery(query=query, purpose=purpose))
