"""Summaries are checked (issue 54, item 3): what a summary cites, inherits, and outlives.

SQLite and PostgreSQL. A summary whose ``provenance.sources`` names anything but a live
memory the writer may read in the summary's purpose is refused with a 422 naming the
position, in the same words whatever the reason; one of live, in-scope memories is
written. It records its inputs' origins and never carries more trust than the least
trusted of them, and it leaves retrieval when an input is retracted, expires or is
superseded (``vault/memory/summaries.py``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
import sqlalchemy as sa
from freezegun import freeze_time

from lethe.vault import errors
from lethe.vault.clock import utcnow
from lethe.vault.memory.service import MemoryService
from lethe.vault.model import (
    Authority,
    Caller,
    MemoryItem,
    Origins,
    Provenance,
    Role,
    SearchQuery,
    SourceType,
    Status,
    Trust,
)
from lethe.vault.policy import DEFAULT_POLICY, Standing
from lethe.vault.store import replay
from lethe.vault.store.tables import events, memories
from tests.conftest import agent, event_count, page_url, reviewer, write_cmd

UNKNOWN = "provenance.sources[2]: unknown or not live memory"


def operator(tenant: str = "t1") -> Caller:
    return Caller(tenant, Role.OPERATOR, None, frozenset(), principal="op")


def note(
    c, content="alice drinks tea", who=None, source=SourceType.USER_STATEMENT, ref="session-1/turn-1", **kw
):  # type: ignore[no-untyped-def]
    who = who or (operator() if source is SourceType.OPERATOR_CONFIG else agent())
    prov = Provenance(source, ref, url=page_url(source))
    return c.memories.write(who, write_cmd(content, provenance=prov, **kw)).item


def summarise(c, content, *cited, who=None, promote=True, **kw) -> MemoryItem:  # type: ignore[no-untyped-def]
    prov = Provenance(SourceType.SUMMARY, "summariser/run-1", tuple(cited))
    item = c.memories.write(who or agent(), write_cmd(content, provenance=prov, **kw)).item
    return c.review.promote(reviewer(item.tenant_id), item.id, item.version).item if promote else item


def searchable(c, query="tea", who=None) -> set[str]:  # type: ignore[no-untyped-def]
    who = who or agent()
    return {i.id for i in c.search.search(who, SearchQuery(query, "support", limit=50)).items}


def status_of(c, memory_id: str, tenant: str = "t1") -> str:
    with c.uow.acting_for(tenant), c.uow.read() as conn:
        return conn.execute(
            sa.select(memories.c.status).where(memories.c.tenant_id == tenant, memories.c.id == memory_id)
        ).scalar_one()


# Each way an id can be no live memory in the writer's scope: a function writing what it
# names (with the container) and returning the id to cite.
def _unknown(c) -> str:  # type: ignore[no-untyped-def]
    return str(uuid.uuid4())


def _not_an_id(c) -> str:  # type: ignore[no-untyped-def]
    return "https://example.com/alice"


def _other_tenant(c) -> str:  # type: ignore[no-untyped-def]
    return note(c, who=agent("t2")).id


def _other_agent(c) -> str:  # type: ignore[no-untyped-def]
    return note(c, who=agent(agent_id="a2")).id


def _purpose_not_in_credential(c) -> str:  # type: ignore[no-untyped-def]
    return note(c, who=agent(purposes=("billing",)), purpose="billing").id


def _other_purpose_in_credential(c) -> str:  # type: ignore[no-untyped-def]
    # The writer reads it (its credential covers billing), but the summary is in support.
    return note(c, who=agent(purposes=("billing",)), purpose="billing").id


def _quarantined(c) -> str:  # type: ignore[no-untyped-def]
    return note(c, source=SourceType.WEB_PAGE, ref="https://example.com/page").id


def _retracted(c) -> str:  # type: ignore[no-untyped-def]
    m = note(c)
    c.retractions.retract(reviewer(), memory_id=m.id, reason="wrong")
    return m.id


def _superseded(c) -> str:  # type: ignore[no-untyped-def]
    m = note(c)
    c.memories.write(agent(), write_cmd("alice drinks green tea", supersedes_id=m.id))
    return m.id


def _expired(c) -> str:  # type: ignore[no-untyped-def]
    with freeze_time(utcnow() - timedelta(hours=2)):
        return note(c, kind="working_note", ttl_seconds=60).id


BAD: dict[str, Callable] = {
    "unknown": _unknown,
    "not_an_id": _not_an_id,
    "other_tenant": _other_tenant,
    "other_agent": _other_agent,
    "purpose_not_in_credential": _purpose_not_in_credential,
    "other_purpose_in_credential": _other_purpose_in_credential,
    "quarantined": _quarantined,
    "retracted": _retracted,
    "superseded": _superseded,
    "expired": _expired,
}


@pytest.mark.parametrize("reason", sorted(BAD))
def test_a_summary_citing_no_live_memory_in_scope_is_a_422_naming_the_position(lethe, reason):
    c = lethe
    first, second = note(c, "alice drinks tea"), note(c, "alice drinks it hot")
    bad = BAD[reason](c)
    writer = agent(purposes=("support", "billing")) if reason == "other_purpose_in_credential" else agent()
    before = event_count(c)
    with pytest.raises(errors.UnknownSource) as refused:
        summarise(c, "alice likes hot tea", first.id, second.id, bad, who=writer, promote=False)
    assert refused.value.status == 422 and refused.value.detail == UNKNOWN  # the same words for every reason
    assert event_count(c) == before  # nothing written
    # Positive control: the same summary of the live, in-scope ids alone is written.
    ok = summarise(c, "alice likes hot tea", first.id, second.id, who=writer, promote=False)
    assert ok.provenance.sources == (first.id, second.id) and status_of(c, ok.id) == "quarantined"


def test_an_operator_memory_of_the_purpose_is_citable_and_the_first_bad_position_is_named(lethe):
    c = lethe
    fact = note(c, "tea is served at nine", source=SourceType.OPERATOR_CONFIG, ref="house-rules")
    mine = note(c)
    s = summarise(c, "alice drinks tea, served at nine", fact.id, mine.id, promote=False)
    assert s.status is Status.QUARANTINED
    with pytest.raises(errors.UnknownSource) as refused:
        summarise(c, "tea", str(uuid.uuid4()), mine.id, "session-1", promote=False)
    assert refused.value.detail == "provenance.sources[0]: unknown or not live memory (1 more after it)"


def test_retracting_an_input_takes_its_summary_out_of_search(lethe):
    c = lethe
    cited, kept = note(c, "alice drinks tea"), note(c, "bob drinks tea", subject="bob@example.com")
    s = summarise(c, "the household drinks tea", cited.id)
    control = summarise(c, "bob is a tea drinker", kept.id)
    assert {s.id, control.id} <= searchable(c)
    c.retractions.retract(reviewer(), memory_id=cited.id, reason="wrong person")
    found = searchable(c)
    assert s.id not in found and control.id in found
    assert status_of(c, s.id) == "retracted"


def test_a_summary_expires_no_later_than_its_inputs_and_leaves_search_with_them(lethe):
    c = lethe
    start = utcnow()
    with freeze_time(start):
        short = note(c, "alice is drinking tea now", kind="working_note", ttl_seconds=3600)
        long = note(c, "bob drinks tea", subject="bob@example.com")
        s = summarise(c, "alice and bob drink tea", short.id, long.id, kind="task_summary")
        control = summarise(c, "bob drinks tea daily", long.id, kind="task_summary")
    assert s.expires_at == short.expires_at  # not its own default of thirty days
    assert control.expires_at == start + timedelta(days=30)  # control: its own default
    with freeze_time(start + timedelta(minutes=30)):
        assert {s.id, control.id} <= searchable(c)
    with freeze_time(start + timedelta(hours=2)):
        found = searchable(c)
        assert s.id not in found and control.id in found
        c.memories.sweep_expired()
    assert status_of(c, s.id) == status_of(c, short.id) == "expired"
    assert status_of(c, control.id) == "active"


def test_the_sweep_expires_a_summary_kept_past_its_input_by_a_reviewer(lethe):
    c = lethe
    start = utcnow()
    with freeze_time(start):
        short = note(c, "alice is drinking tea now", kind="preference", ttl_seconds=3600)
        other = note(c, "bob drinks tea", subject="bob@example.com", kind="preference", ttl_seconds=3600)
        s = summarise(c, "alice drinks tea", short.id, kind="task_summary")
        meta = summarise(c, "tea is drunk here", s.id, kind="task_summary")  # built on the summary
        control = summarise(c, "bob drinks tea", other.id, kind="task_summary")
        for m in (s, meta, control):  # a reviewer keeps each for thirty days
            c.retention.confirm(reviewer(), m.id, m.version, timedelta(days=30))
        c.retention.confirm(reviewer(), other.id, other.version, timedelta(days=30))
    with freeze_time(start + timedelta(hours=2)):
        assert c.memories.sweep_expired() == 3  # the input and the two summaries built on it
        found = searchable(c)
    assert s.id not in found and meta.id not in found and control.id in found
    assert [status_of(c, m.id) for m in (short, s, meta, control)] == ["expired"] * 3 + ["active"]
    with c.uow.read() as conn:
        causes = {
            r.memory_id: json.loads(r.payload).get("cause")
            for r in conn.execute(sa.select(events).where(events.c.type == "memory.expired"))
        }
    assert causes == {short.id: None, s.id: "input_expired", meta.id: "input_expired"}
    assert replay.check(c.uow.engine).identical


def test_superseding_an_input_expires_the_summaries_built_on_it(lethe):
    c = lethe
    wrong = note(c, "alice drinks tea with sugar")
    kept = note(c, "bob drinks tea", subject="bob@example.com")
    s = summarise(c, "alice drinks sweet tea", wrong.id)
    meta = summarise(c, "sweet tea is drunk here", s.id, kept.id)
    control = summarise(c, "bob drinks tea", kept.id)
    assert {s.id, meta.id, control.id} <= searchable(c)
    c.memories.write(agent(), write_cmd("alice drinks tea without sugar", supersedes_id=wrong.id))
    found = searchable(c)
    assert s.id not in found and meta.id not in found and control.id in found
    assert [status_of(c, m.id) for m in (wrong, s, meta, control)] == [
        "superseded",
        "expired",
        "expired",
        "active",
    ]
    with c.uow.read() as conn:
        causes = {
            r.memory_id: json.loads(r.payload)["cause"]
            for r in conn.execute(sa.select(events).where(events.c.type == "memory.expired"))
        }
    assert causes == {s.id: "input_superseded", meta.id: "input_superseded"}
    assert replay.check(c.uow.engine).identical  # the log alone rebuilds it


def test_a_promoted_summary_is_never_trusted_above_its_least_trusted_input(lethe):
    c = lethe
    fact = note(c, "tea is served at nine", source=SourceType.OPERATOR_CONFIG, ref="house-rules")
    said = note(c, "alice drinks tea")
    assert (fact.trust, said.trust) == (Trust.VERIFIED, Trust.TRUSTED)
    of_fact = summarise(c, "tea at nine", fact.id)
    of_both = summarise(c, "alice drinks tea at nine", fact.id, said.id)
    of_summary = summarise(c, "tea here", of_fact.id, of_both.id)
    assert of_fact.trust is Trust.VERIFIED  # control: a reviewer's promotion, nothing lower cited
    assert of_both.trust is Trust.TRUSTED and of_summary.trust is Trust.TRUSTED


def test_a_summary_is_written_with_the_lowest_trust_among_its_inputs_and_its_standing(lethe):
    c = lethe
    # A deployment that stores web pages active (untrusted) and summaries active and trusted.
    policy = {
        **DEFAULT_POLICY,
        (Role.AGENT, SourceType.WEB_PAGE): Standing(Authority.EXTERNAL, Trust.UNTRUSTED, Status.ACTIVE),
        (Role.AGENT, SourceType.SUMMARY): Standing(Authority.AGENT, Trust.TRUSTED, Status.ACTIVE),
    }
    service = MemoryService(c.uow, c.keyring, c.pseudonyms, policy=policy, log=c.log)
    web = Provenance(SourceType.WEB_PAGE, "u", url=page_url(SourceType.WEB_PAGE))
    page = service.write(agent(), write_cmd("tea cures colds", provenance=web)).item
    said = note(c, "alice drinks tea")
    assert (page.status, page.trust) == (Status.ACTIVE, Trust.UNTRUSTED)
    of_page = summarise(
        service_container(c, service), "tea cures alice's colds", page.id, said.id, promote=False
    )
    of_said = summarise(service_container(c, service), "alice drinks tea", said.id, promote=False)
    assert of_page.trust is Trust.UNTRUSTED  # a summary of an untrusted input cannot be trusted
    assert of_said.trust is Trust.TRUSTED  # control: the standing's trust where nothing lower is cited


def service_container(c, service):  # type: ignore[no-untyped-def]
    """``c`` with another memory service (for ``summarise``)."""

    class _With:
        memories = service
        review = c.review

    return _With


def test_a_summary_records_its_inputs_origins_all_the_way_down_without_source_refs(lethe):
    c = lethe
    fact = note(c, "tea is served at nine", source=SourceType.OPERATOR_CONFIG, ref="house-rules")
    said = note(c, "alice drinks tea", ref="https://social.example/alice")
    first = summarise(c, "alice drinks tea at nine", fact.id, said.id)
    second = note(c, "bob drinks tea", subject="bob@example.com")
    top = summarise(c, "tea is drunk here", first.id, second.id)
    assert top.provenance.sources == (first.id, second.id)
    assert top.provenance.origins == Origins(
        tuple(sorted({first.id, second.id, fact.id, said.id})),
        ("operator_config", "summary", "user_statement"),
        Trust.TRUSTED,
    )
    assert c.memories.get(agent(), top.id).provenance.origins == top.provenance.origins  # as stored
    with c.uow.read() as conn:
        payload = conn.execute(
            sa.select(events.c.payload).where(events.c.memory_id == top.id, events.c.type == "memory.written")
        ).scalar_one()
    assert json.loads(payload)["provenance"]["origins"]["memory_ids"] == list(
        top.provenance.origins.memory_ids
    )
    assert "social.example" not in payload and "house-rules" not in payload  # the inputs' refs stay out
    assert replay.check(c.uow.engine).identical
    # A writer never gives origins itself.
    forged = Provenance(
        SourceType.SUMMARY, "s", (said.id,), Origins((said.id,), ("operator_config",), Trust.VERIFIED)
    )
    with pytest.raises(errors.InvalidCommand):
        c.memories.write(agent(), write_cmd("tea", provenance=forged))


def test_an_input_retracted_after_the_write_was_admitted_still_refuses_it(lethe, monkeypatch):
    """The check runs under the write lock: a retraction committing after the write was
    validated and keyed, before its transaction, is seen."""
    c = lethe
    cited, other = note(c, "alice drinks tea"), note(c, "alice drinks it hot")
    prepare = c.memories._prepare
    retract = [cited.id]

    def then_retract(*args, **kwargs):  # type: ignore[no-untyped-def]
        prepared = prepare(*args, **kwargs)
        while retract:
            c.retractions.retract(reviewer(), memory_id=retract.pop(), reason="wrong")
        return prepared

    monkeypatch.setattr(c.memories, "_prepare", then_retract)
    with pytest.raises(errors.UnknownSource):
        summarise(c, "alice drinks tea", cited.id, promote=False)
    assert status_of(c, cited.id) == "retracted"
    # Positive control: the same path with nothing retracted on the way writes the summary.
    assert summarise(c, "alice drinks hot tea", other.id, promote=False).status is Status.QUARANTINED
