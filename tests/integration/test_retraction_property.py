"""Property: retracting a source removes exactly its memories and what cites them, nothing else.

Hypothesis draws small stores (several tenants, agents, purposes, sources and subjects;
trusted and quarantined writes; memory ids shared between tenants; summaries citing
random sets of memories, other summaries (written before or after them) and sources,
some promoted; the store must accept exactly those citing live memories of the writer's
scope, ``memory.summaries``), retracts one
source in one tenant, and checks the whole store against a plain model: the memories of
that tenant written from that source, and the summaries citing them (or the source)
directly or through other summaries, are retracted; no other row in any tenant changes;
and every agent's and purpose's search, every read and the review queue agree.

Runs on real SQLite and PostgreSQL. One store per backend; each example uses fresh
tenants, and the "nothing else" check covers every row of the store.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lethe.vault import errors
from lethe.vault.memory.review import QueueQuery
from lethe.vault.model import Provenance, SearchQuery, SourceType
from lethe.vault.store.tables import memories, search_index
from tests.conftest import agent, page_url, reviewer, write_cmd

EXAMPLES = int(os.environ.get("LETHE_PROPERTY_EXAMPLES", "50"))
AGENTS, PURPOSES, SUBJECTS = ("a1", "a2"), ("p1", "p2"), ("alice", "bob")
SOURCES = ("https://one.example/x", "tool:run-2", "session-3/turn-1")
SHARED_IDS = 3  # client-chosen ids several tenants may use at once


@dataclass
class Item:
    tenant: str
    id: str
    agent: str
    purpose: str
    source: str
    status: str
    cites: frozenset[str] = field(default_factory=frozenset)  # summaries only


def _writes(tenants: int):  # type: ignore[no-untyped-def]
    return st.fixed_dictionaries(
        {
            "tenant": st.integers(0, tenants - 1),
            "agent": st.sampled_from(AGENTS),
            "purpose": st.sampled_from(PURPOSES),
            "subject": st.sampled_from(SUBJECTS),
        }
    )


@st.composite
def stores(draw):  # type: ignore[no-untyped-def]
    tenants = draw(st.integers(1, 3))
    memory = st.tuples(
        _writes(tenants),
        st.sampled_from(SOURCES),
        st.booleans(),  # trusted (active) or from the web (quarantined)
        st.none() | st.integers(0, SHARED_IDS - 1),
    )
    written = draw(st.lists(memory, min_size=1, max_size=8))
    summaries = []
    count = draw(st.integers(0, 5))
    for k in range(count):
        # Any memory, any other summary (one written later too: ids are chosen up front), or a source.
        others = [i for i in range(len(written) + count) if i != len(written) + k]
        # Sources now and then: a summary citing one is refused (it is no memory id).
        cite = st.sampled_from([*others, *others, *others, *SOURCES])
        summaries.append(
            draw(
                st.tuples(
                    _writes(tenants),
                    st.sampled_from((*SOURCES, "summariser")),
                    st.lists(cite, min_size=1, max_size=3),
                    st.booleans(),  # promoted, or left in quarantine
                    st.booleans(),  # its cites narrowed to the live ones of its writer's scope (accepted)
                )
            )
        )
    target = draw(st.tuples(st.integers(0, tenants - 1), st.sampled_from(SOURCES)))
    return tenants, written, summaries, target


def build(c, tenants, written, summaries) -> tuple[list[Item], list[str]]:  # type: ignore[no-untyped-def]
    """Write the drawn store under fresh tenant names; the model of each item, and the tenants."""
    run = uuid.uuid4().hex[:8]
    names = [f"prop-{run}-{i}" for i in range(tenants)]
    shared = [str(uuid.uuid4()) for _ in range(SHARED_IDS)]
    items: list[Item] = []

    def caller(w):  # type: ignore[no-untyped-def]
        return agent(names[w["tenant"]], w["agent"], PURPOSES)

    for w, source, trusted, shared_id in written:
        tenant = names[w["tenant"]]
        chosen = shared[shared_id] if shared_id is not None else None
        if any(i.tenant == tenant and i.id == chosen for i in items):
            chosen = None
        kind = SourceType.USER_STATEMENT if trusted else SourceType.WEB_PAGE
        cmd = write_cmd(
            f"tea note {len(items)}",
            subject=w["subject"],
            provenance=Provenance(kind, source, url=page_url(kind)),
            purpose=w["purpose"],
            id=chosen,
        )
        m = c.memories.write(caller(w), cmd).item
        items.append(Item(tenant, m.id, w["agent"], w["purpose"], source, m.status.value))
    ids = [i.id for i in items] + [str(uuid.uuid4()) for _ in summaries]
    for k, (w, source, cites, promote, narrow) in enumerate(summaries):
        # Written in the scope of the first active memory it cites, if there is one (else as
        # drawn): a summary is accepted only if every id it cites is a live memory of its
        # writer's scope, and the store must agree with this model on each.
        first = next(
            (
                x
                for x in cites
                if isinstance(x, int) and (o := _written(items, ids[x])) and o.status == "active"
            ),
            None,
        )
        if first is not None:
            it = _written(items, ids[first])
            w = {**w, "tenant": names.index(it.tenant), "agent": it.agent, "purpose": it.purpose}
            if narrow:
                scope = (it.tenant, it.agent, it.purpose)
                cites = [
                    x
                    for x in cites
                    if isinstance(x, int)
                    and (o := _written(items, ids[x])) is not None
                    and (o.tenant, o.agent, o.purpose, o.status) == (*scope, "active")
                ]
        tenant = names[w["tenant"]]
        sources = tuple(dict.fromkeys(ids[x] if isinstance(x, int) else x for x in cites))
        mine = {(i.tenant, i.id): i for i in items}
        citable = all(
            (t := mine.get((tenant, x))) is not None
            and (t.agent, t.purpose, t.status) == (w["agent"], w["purpose"], "active")
            for x in sources
        )
        cmd = write_cmd(
            f"tea summary {len(items)}",
            subject=w["subject"],
            provenance=Provenance(SourceType.SUMMARY, source, sources),
            purpose=w["purpose"],
            id=ids[len(written) + k],
        )
        try:
            s = c.memories.write(caller(w), cmd).item
        except errors.UnknownSource:
            assert not citable, sources
            continue
        assert citable, sources
        if promote:
            s = c.review.promote(reviewer(tenant), s.id, s.version).item
        items.append(Item(tenant, s.id, w["agent"], w["purpose"], source, s.status.value, frozenset(sources)))
    return items, names


def _written(items: list[Item], memory_id: str) -> Item | None:
    """The first item written under this id (in any tenant), if any."""
    return next((i for i in items if i.id == memory_id), None)


def model_retraction(items: list[Item], tenant: str, source: str) -> tuple[set[str], set[str]]:
    """The plain model: the tenant's memories from the source, and what cites them, transitively."""
    mine = [i for i in items if i.tenant == tenant]
    roots = {i.id for i in mine if i.source == source}
    gone, derived = roots | {source}, set()
    changed = True
    while changed:
        changed = False
        for s in mine:
            if s.cites and s.id not in gone and s.cites & gone:
                gone.add(s.id)
                derived.add(s.id)
                changed = True
    return roots, derived


def all_statuses(c) -> dict[tuple[str, str], str]:  # type: ignore[no-untyped-def]
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return {(r.tenant_id, r.id): r.status for r in conn.execute(sa.select(memories))}


def test_retracting_a_source_removes_exactly_its_memories_and_the_summaries_citing_them(lethe):
    @given(store=stores())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    def check(store) -> None:  # type: ignore[no-untyped-def]
        tenants, written, summaries, (t, source) = store
        items, names = build(lethe, tenants, written, summaries)
        target = names[t]
        roots, derived = model_retraction(items, target, source)
        before = all_statuses(lethe)

        result = lethe.retractions.retract(reviewer(target), source_ref=source, reason="property")

        assert result.memory_ids == sorted(roots) and result.derived_ids == sorted(derived)
        after = all_statuses(lethe)
        removed = {(target, i) for i in roots | derived}
        assert {k for k in after if after[k] != before[k]} == removed  # nothing else, in any tenant
        assert all(after[k] == "retracted" for k in removed)
        with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
            indexed = set(conn.execute(sa.select(search_index.c.tenant_id, search_index.c.memory_id)).all())
        assert not removed & indexed  # the search index holds nothing of what was retracted
        for item in items:
            item.status = after[(item.tenant, item.id)]
        for tenant in names:  # every agent's and purpose's view, and the reviewers'
            for a in AGENTS:
                for p in PURPOSES:
                    found = lethe.search.search(agent(tenant, a, (p,)), SearchQuery("tea", p, limit=100))
                    expected = {
                        i.id
                        for i in items
                        if (i.tenant, i.agent, i.purpose, i.status) == (tenant, a, p, "active")
                    }
                    assert {i.id for i in found.items} == expected
            queue = lethe.review.queue(reviewer(tenant), QueueQuery(limit=100)).items
            assert [i.id for i in queue] == [
                i.id for i in items if i.tenant == tenant and i.status == "quarantined"
            ]
        for item in items:
            reader = agent(item.tenant, item.agent, PURPOSES)
            if item.status == "active":
                assert lethe.memories.get(reader, item.id).id == item.id
            else:
                try:
                    lethe.memories.get(reader, item.id)
                except errors.NotFound:
                    continue
                raise AssertionError(f"{item.status} memory {item.id} is readable")

    check()
