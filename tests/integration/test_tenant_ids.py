"""Memory identity is (tenant, id): one tenant's ids tell another nothing (issue 10, item 5).

Tenant B may create its own memory under an id tenant A already uses; every command,
the search index, forgetting, compaction and replay then keep the two apart. SQLite and
PostgreSQL.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from lethe.api.bootstrap import initialise
from lethe.api.settings import Settings
from lethe.vault import errors
from lethe.vault.clock import utcnow
from lethe.vault.erasure.compaction import Compactor
from lethe.vault.memory.service import MemoryService
from lethe.vault.model import Provenance, SearchQuery, SourceType, Status
from lethe.vault.store import replay
from lethe.vault.store.db import make_engine
from lethe.vault.store.schema import schema_state, upgrade
from lethe.vault.store.tables import events, memories, search_index
from tests.conftest import agent, officer, reviewer, write_cmd

A, B = "ta", "tb"
ALICE, BOB = "alice@example.com", "bob@example.com"


def write_a(c, content: str = "alice likes green tea", subject: str = ALICE, **kw):  # type: ignore[no-untyped-def]
    return c.memories.write(agent(A), write_cmd(content, subject=subject, **kw)).item


def write_b(c, memory_id: str, content: str = "bob likes black tea", **kw):  # type: ignore[no-untyped-def]
    return c.memories.write(agent(B), write_cmd(content, subject=BOB, id=memory_id, expected_version=0, **kw))


def search(c, tenant: str, query: str = "tea"):  # type: ignore[no-untyped-def]
    return c.search.search(agent(tenant), SearchQuery(query=query, purpose="support")).items


def written_ciphertexts(c, tenant: str, memory_id: str) -> list[bytes | None]:
    with c.uow.read() as conn:
        return list(
            conn.execute(
                sa.select(events.c.ciphertext).where(
                    events.c.tenant_id == tenant,
                    events.c.memory_id == memory_id,
                    events.c.type == "memory.written",
                )
            ).scalars()
        )


def forget(c, tenant: str, subject: str):  # type: ignore[no-untyped-def]
    job = c.erasure.request(officer(tenant), subject, "gdpr-art17-1a", "ticket-1")
    c.erasure.run_pending()
    return c.erasure.get(officer(tenant), job.id)


def test_a_new_memory_under_another_tenants_id_is_created_like_under_an_unknown_id(lethe):
    theirs = write_a(lethe)
    shared = write_b(lethe, theirs.id)
    fresh = write_b(lethe, str(uuid.uuid4()))
    assert shared.created and fresh.created
    same = ("tenant_id", "agent_id", "subject_ref", "version", "status", "trust", "authority", "content")
    assert {k: getattr(shared.item, k) for k in same} == {k: getattr(fresh.item, k) for k in same}
    assert shared.item.id == theirs.id
    assert lethe.memories.get(agent(A), theirs.id) == theirs
    assert lethe.memories.get(agent(B), theirs.id).content == "bob likes black tea"


def test_updating_another_tenants_id_is_not_found_like_an_unknown_id(lethe):
    theirs = write_a(lethe)
    with pytest.raises(errors.NotFound) as other:
        lethe.memories.write(agent(B), write_cmd("overwrite", subject=BOB, id=theirs.id, expected_version=1))
    with pytest.raises(errors.NotFound) as unknown:
        lethe.memories.write(
            agent(B), write_cmd("overwrite", subject=BOB, id=str(uuid.uuid4()), expected_version=1)
        )
    assert str(other.value) == str(unknown.value)
    assert lethe.memories.get(agent(A), theirs.id) == theirs


def test_each_tenant_searches_only_its_own_memory_under_a_shared_id(lethe):
    theirs = write_a(lethe)
    write_b(lethe, theirs.id)
    found_a, found_b = search(lethe, A), search(lethe, B)
    assert [(i.id, i.content) for i in found_a] == [(theirs.id, "alice likes green tea")]
    assert [(i.id, i.content) for i in found_b] == [(theirs.id, "bob likes black tea")]
    assert found_a[0].score["lexical"] > 0 and found_b[0].score["lexical"] > 0  # type: ignore[index]


def test_updating_a_shared_id_changes_only_the_callers_memory_and_index_entry(lethe):
    theirs = write_a(lethe)
    write_b(lethe, theirs.id)
    updated = lethe.memories.write(
        agent(B), write_cmd("bob likes oolong tea", subject=BOB, id=theirs.id, expected_version=1)
    ).item
    assert updated.version == 2 and updated.tenant_id == B
    assert lethe.memories.get(agent(A), theirs.id) == theirs
    [hit] = search(lethe, A, "green tea")
    assert hit.id == theirs.id and hit.score["lexical"] == 1.0  # type: ignore[index]


def test_an_idempotent_retry_returns_the_callers_memory_under_a_shared_id(lethe):
    theirs = write_a(lethe)
    cmd = write_cmd("bob likes black tea", subject=BOB, id=theirs.id, expected_version=0, key="retry-1")
    first = lethe.memories.write(agent(B), cmd)
    again = lethe.memories.write(agent(B), cmd)
    assert not again.created and again.item == first.item
    assert again.item.tenant_id == B and again.item.content == "bob likes black tea"


def test_promoting_a_shared_id_promotes_only_the_reviewers_tenants_memory(lethe):
    tool = Provenance(SourceType.TOOL_RESULT, "tool-1")
    theirs = write_a(lethe, provenance=tool)
    write_b(lethe, theirs.id, provenance=tool)
    promoted = lethe.review.promote(reviewer(B), theirs.id, 1).item
    assert (promoted.tenant_id, promoted.status, promoted.content) == (
        B,
        Status.ACTIVE,
        "bob likes black tea",
    )
    assert lethe.memories.get(reviewer(A), theirs.id).status is Status.QUARANTINED


def test_superseding_a_shared_id_supersedes_only_the_callers_memory(lethe):
    theirs = write_a(lethe)
    write_b(lethe, theirs.id)
    correction = lethe.memories.write(
        agent(B), write_cmd("bob likes white tea", subject=BOB, supersedes_id=theirs.id)
    ).item
    assert correction.supersedes_id == theirs.id
    assert lethe.memories.get(agent(B), theirs.id).status is Status.SUPERSEDED
    assert lethe.memories.get(agent(A), theirs.id) == theirs


def test_expiring_one_tenants_memory_leaves_the_same_id_live_in_the_other(lethe):
    theirs = write_a(lethe, ttl_seconds=60)
    write_b(lethe, theirs.id)
    later = MemoryService(
        lethe.uow, lethe.keyring, lethe.pseudonyms, clock=lambda: utcnow() + timedelta(hours=1), log=lethe.log
    )
    assert later.sweep_expired() == 1
    with pytest.raises(errors.NotFound):
        lethe.memories.get(agent(A), theirs.id)
    assert lethe.memories.get(agent(B), theirs.id).status is Status.ACTIVE


@pytest.mark.parametrize("forgotten, kept", [(A, B), (B, A)])
def test_forgetting_one_tenants_subject_leaves_the_other_tenants_same_id_memory_intact(
    lethe, forgotten, kept
):
    theirs = write_a(lethe)
    write_b(lethe, theirs.id)
    subject = {A: ALICE, B: BOB}
    content = {A: "alice likes green tea", B: "bob likes black tea"}
    job = forget(lethe, forgotten, subject[forgotten])
    assert job.status == lethe.erasure.final_status and job.completed_at is not None
    with pytest.raises(errors.NotFound):
        lethe.memories.get(agent(forgotten), theirs.id)
    assert lethe.memories.get(agent(kept), theirs.id).content == content[kept]
    [hit] = search(lethe, kept)
    assert hit.content == content[kept] and hit.score["lexical"] > 0  # type: ignore[index]
    lethe.compactor.compact(only_forgotten=True)
    assert written_ciphertexts(lethe, forgotten, theirs.id) == [None]
    assert all(written_ciphertexts(lethe, kept, theirs.id))
    assert replay.check(lethe.uow.engine).identical


def test_a_summary_is_purged_by_its_own_tenants_sources_only(lethe):
    alices = write_a(lethe)
    summary = write_a(
        lethe,
        "household likes tea",
        subject="carol",
        provenance=Provenance(SourceType.SUMMARY, "summariser", (alices.id,)),
    )
    # Tenant B holds a memory under the summary's id, and its own summary citing A's memory's id.
    write_b(lethe, summary.id)
    write_b(lethe, alices.id, "bob likes tea too")
    b_summary = lethe.memories.write(
        agent(B),
        write_cmd(
            "bob household likes tea",
            subject=BOB,
            provenance=Provenance(SourceType.SUMMARY, "summariser", (alices.id,)),
        ),
    ).item
    job = forget(lethe, A, ALICE)
    purge = next(s for s in job.steps if s.step == "derived_purged").evidence
    assert purge["derived_ids"] == [summary.id]
    assert purge["index_entries_before"] == 1 and purge["index_entries_after"] == 0
    assert lethe.memories.get(reviewer(B), b_summary.id).status is Status.QUARANTINED
    assert lethe.memories.get(agent(B), summary.id).content == "bob likes black tea"
    with lethe.uow.acting_for(B), lethe.uow.read() as conn:
        b_entries = conn.execute(
            sa.select(sa.func.count()).select_from(search_index).where(search_index.c.tenant_id == B)
        ).scalar_one()
    assert b_entries == 3


def test_compaction_does_not_count_another_tenants_write_as_a_rewrite(lethe):
    theirs = write_a(lethe)
    write_b(lethe, theirs.id)
    Compactor(lethe.uow, retention=timedelta(0)).compact()
    assert all(written_ciphertexts(lethe, A, theirs.id))
    assert replay.check(lethe.uow.engine).identical


def test_replay_rebuilds_both_tenants_memories_under_a_shared_id(lethe):
    theirs = write_a(lethe)
    write_b(lethe, theirs.id)
    lethe.memories.write(
        agent(B), write_cmd("bob likes oolong tea", subject=BOB, id=theirs.id, expected_version=1)
    )
    assert replay.check(lethe.uow.engine).identical
    replay.rebuild(lethe.uow.engine)
    assert lethe.memories.get(agent(A), theirs.id) == theirs
    assert lethe.memories.get(agent(B), theirs.id).content == "bob likes oolong tea"


def _memory_row(tenant: str, memory_id: str) -> dict:
    now = utcnow().replace(tzinfo=None)
    return {
        "id": memory_id,
        "tenant_id": tenant,
        "agent_id": "a1",
        "subject_ref": "ref",
        "purpose": "support",
        "kind": "fact",
        "ciphertext": b"\x01\x02",
        "sealed_version": 1,
        "key_generation": 1,
        "content_hmac": "hmac",
        "token_estimate": 1,
        "provenance": "{}",
        "authority": "user",
        "trust": "trusted",
        "confidence": 0.5,
        "created_at": now,
        "updated_at": now,
        "expires_at": now,
        "version": 1,
        "status": "active",
        "supersedes_id": None,
        "superseded_by": None,
        "idempotency_key": "k",
    }


def test_the_0003_migration_keeps_rows_and_scopes_primary_keys_by_tenant(settings: Settings):
    initialise(settings)
    engine = make_engine(settings.db_url)
    try:
        upgrade(engine, "0002")
        memory_id = str(uuid.uuid4())
        row = _memory_row(A, memory_id)
        entry = {"memory_id": memory_id, "tenant_id": A, "subject_ref": "ref", "terms": "t1 t2"}
        with engine.begin() as conn:
            conn.execute(memories.insert(), row)
            conn.execute(search_index.insert(), entry)
        upgrade(engine)
        assert schema_state(engine).up_to_date
        inspector = sa.inspect(engine)
        assert inspector.get_pk_constraint("memories")["constrained_columns"] == ["tenant_id", "id"]
        assert inspector.get_pk_constraint("search_index")["constrained_columns"] == [
            "tenant_id",
            "memory_id",
        ]
        assert {i["name"] for i in inspector.get_indexes("memories")} >= {
            "ix_memories_scope",
            "ix_memories_subject",
        }
        assert {i["name"] for i in inspector.get_indexes("search_index")} == {"ix_search_index_subject"}
        with engine.begin() as conn:
            kept = dict(conn.execute(sa.select(memories)).one()._mapping)
            assert {k: kept[k] for k in row} == row  # later revisions add columns (0005: created_seq)
            assert dict(conn.execute(sa.select(search_index)).one()._mapping) == entry
            conn.execute(memories.insert(), {**_memory_row(B, memory_id), "created_seq": 1})
            conn.execute(search_index.insert(), {**entry, "tenant_id": B})
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(memories.insert(), {**_memory_row(B, memory_id), "created_seq": 2})
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(search_index.insert(), {**entry, "tenant_id": B})
    finally:
        engine.dispose()
