"""Retraction of one memory, or of everything from one source (issue 12, item 2).

SQLite and PostgreSQL. A retraction takes the memory (or every memory of the tenant
written from the source) and the summaries built on it out of every view at once, leaves
the subject readable, is recorded as audit events and a ledger (ids and counts, never
content), has its ciphertext compacted away, and survives a backup restore.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from lethe.vault import errors
from lethe.vault.erasure.backup import create_backup, restore_backup
from lethe.vault.model import Caller, Provenance, Role, SearchQuery, SourceType
from lethe.vault.store import replay
from lethe.vault.store.tables import events, memories, retractions, search_index
from tests.conftest import agent, event_count, officer, page_url, reviewer, write_cmd

ALICE, BOB = "alice@example.com", "bob@example.com"
POISONED = "https://evil.example/page"


def write(c, content, ref="session-1/turn-1", source=SourceType.USER_STATEMENT, who=None, **kw):  # type: ignore[no-untyped-def]
    return c.memories.write(
        who or agent(), write_cmd(content, provenance=Provenance(source, ref, url=page_url(source)), **kw)
    ).item


def summarise(c, content, *cited, who=None, subject=BOB):  # type: ignore[no-untyped-def]
    prov = Provenance(SourceType.SUMMARY, "summariser/run-1", tuple(cited))
    item = c.memories.write(who or agent(), write_cmd(content, subject=subject, provenance=prov)).item
    return c.review.promote(reviewer(item.tenant_id), item.id, item.version).item


def statuses(c) -> dict[tuple[str, str], str]:
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return {(r.tenant_id, r.id): r.status for r in conn.execute(sa.select(memories))}


def searchable(c, caller, query="tea") -> set[str]:
    return {i.id for i in c.search.search(caller, SearchQuery(query, sorted(caller.purposes)[0])).items}


def test_retracting_a_memory_takes_it_out_of_every_view_at_once_and_keeps_its_subject(lethe):
    c = lethe
    wrong = write(c, "alice drinks tea with sugar", subject=ALICE)
    right = write(c, "alice drinks tea without sugar", subject=ALICE)
    assert searchable(c, agent()) == {wrong.id, right.id}
    result = c.retractions.retract(reviewer(), memory_id=wrong.id, reason="the user corrected it")
    assert result.memory_ids == [wrong.id] and result.derived_ids == [] and not result.dry_run
    assert searchable(c, agent()) == {right.id}
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(), wrong.id)
    # The subject is untouched: its other memories read, new writes are accepted.
    assert c.memories.get(agent(), right.id).content == "alice drinks tea without sugar"
    assert c.memories.write(agent(), write_cmd("alice likes oolong", subject=ALICE)).created
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        row = conn.execute(sa.select(memories).where(memories.c.id == wrong.id)).one()
        index = conn.execute(sa.select(search_index).where(search_index.c.memory_id == wrong.id)).all()
    assert row.status == "retracted" and row.ciphertext is None and index == []


def test_retracting_cascades_to_the_summaries_citing_it_transitively(lethe):
    c = lethe
    a = write(c, "alice drinks tea", subject=ALICE)
    b = write(c, "bob drinks tea", subject=BOB)
    summary = summarise(c, "the household drinks tea", a.id, b.id)
    meta = summarise(c, "a summary of the tea summary", summary.id, subject="carol")
    unrelated = summarise(c, "bob and his tea", b.id)
    result = c.retractions.retract(officer(), memory_id=a.id, reason="recorded for the wrong person")
    assert result.memory_ids == [a.id] and result.derived_ids == sorted([summary.id, meta.id])
    after = statuses(c)
    assert after[("t1", summary.id)] == after[("t1", meta.id)] == "retracted"
    assert after[("t1", unrelated.id)] == after[("t1", b.id)] == "active"
    assert searchable(c, agent()) == {b.id, unrelated.id}


def test_retracting_by_source_takes_every_memory_from_it_whatever_agent_purpose_or_subject(lethe):
    c = lethe
    a2 = agent(agent_id="a2", purposes=("billing",))
    from_page = [
        write(c, "tea is poisonous", POISONED, SourceType.WEB_PAGE, subject=ALICE),
        write(c, "tea is poisonous for bob", POISONED, SourceType.WEB_PAGE, subject=BOB),
        write(c, "tea bills are fake", POISONED, SourceType.WEB_PAGE, who=a2, purpose="billing"),
    ]
    c.review.promote(reviewer(), from_page[0].id, from_page[0].version)
    elsewhere = write(c, "tea is fine", "https://good.example/page", SourceType.WEB_PAGE)
    similar = write(c, "tea", POISONED + "2", SourceType.WEB_PAGE)  # another source sharing a prefix
    upper = write(c, "tea", POISONED.upper(), SourceType.WEB_PAGE)  # SQLite's LIKE ignores case; we must not
    trusted = write(c, "alice likes tea", subject=ALICE)
    cites_page = summarise(c, "tea summary", from_page[0].id, trusted.id)
    cites_summary = summarise(c, "what the summary says", cites_page.id)  # through another summary
    other_tenant = write(c, "tea is poisonous", POISONED, SourceType.WEB_PAGE, who=agent("t2"))
    before = statuses(c)
    result = c.retractions.retract(reviewer(), source_ref=POISONED, reason="the site was compromised")
    assert result.memory_ids == sorted(m.id for m in from_page)
    assert result.derived_ids == sorted([cites_page.id, cites_summary.id])
    after = statuses(c)
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {("t1", i) for i in [*result.memory_ids, *result.derived_ids]}
    assert all(after[k] == "retracted" for k in changed)
    assert searchable(c, agent()) == {trusted.id}
    assert searchable(c, a2) == set()
    for untouched in (elsewhere, similar, upper):
        assert after[("t1", untouched.id)] == "quarantined"
    assert after[("t2", other_tenant.id)] == "quarantined"


def test_a_source_that_matches_nothing_is_recorded_empty(lethe):
    result = lethe.retractions.retract(reviewer(), source_ref="https://nothing.example", reason="precaution")
    assert result.id and result.memory_ids == [] and result.derived_ids == []


def test_a_dry_run_lists_what_would_go_and_writes_nothing(lethe):
    c = lethe
    page = write(c, "tea is poisonous", POISONED, SourceType.WEB_PAGE)
    c.review.promote(reviewer(), page.id, page.version)
    summary = summarise(c, "tea summary", page.id)
    before, events_before = statuses(c), event_count(c)
    for target in ({"source_ref": POISONED}, {"memory_id": page.id}):
        plan = c.retractions.retract(reviewer(), reason="checking", dry_run=True, **target)
        assert plan.dry_run and plan.id is None
        assert plan.memory_ids == [page.id] and plan.derived_ids == [summary.id]
    assert statuses(c) == before and event_count(c) == events_before
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(retractions)).scalar_one() == 0
    assert searchable(c, agent()) == {page.id, summary.id}


def test_exactly_one_of_memory_id_and_source_ref_and_a_reason(lethe):
    page = write(lethe, "tea", POISONED, SourceType.WEB_PAGE)
    before = event_count(lethe)
    for kwargs in (
        {},
        {"memory_id": page.id, "source_ref": POISONED},
        {"memory_id": page.id, "reason": " "},
        {"source_ref": "x" * 513},
    ):
        with pytest.raises(errors.InvalidCommand):
            lethe.retractions.retract(reviewer(), **{"reason": "why", **kwargs})
    assert event_count(lethe) == before


def test_an_unknown_id_is_the_same_404_as_another_tenants_or_a_forgotten_one(lethe):
    c = lethe
    theirs = write(c, "their tea", who=agent("t2"))
    forgotten = write(c, "carol's tea", subject="carol")
    job = c.erasure.request(officer(), "carol", "gdpr-art17-1a", None)
    c.erasure.run_pending()
    assert c.erasure.get(officer(), job.id).completed_at
    answers = []
    for memory_id in ("00000000-0000-4000-8000-000000000000", theirs.id, forgotten.id):
        with pytest.raises(errors.NotFound) as info:
            c.retractions.retract(officer(), memory_id=memory_id, reason="x")
        answers.append((info.value.status, info.value.title, info.value.detail))
    assert len(set(answers)) == 1
    assert statuses(c)[("t2", theirs.id)] == "active"


def test_a_retracted_memory_cannot_be_retracted_again_or_updated(lethe):
    c = lethe
    item = write(c, "alice drinks tea")
    c.retractions.retract(reviewer(), memory_id=item.id, reason="wrong")
    with pytest.raises(errors.VersionConflict):
        c.retractions.retract(reviewer(), memory_id=item.id, reason="wrong again")
    with pytest.raises(errors.VersionConflict):
        c.memories.write(agent(), write_cmd("alice drinks coffee", id=item.id, expected_version=2))
    with pytest.raises(errors.VersionConflict):
        c.memories.write(agent(), write_cmd("correction", supersedes_id=item.id))


def test_only_reviewers_and_privacy_officers_retract(lethe):
    item = write(lethe, "alice drinks tea")
    others = [
        Caller("t1", role, None, frozenset(), principal="x")
        for role in (Role.AUDITOR, Role.ADMIN, Role.OPERATOR)
    ]
    for caller in (agent(), *others):
        with pytest.raises(errors.OutOfScope):
            lethe.retractions.retract(caller, memory_id=item.id, reason="x")


def test_the_next_compaction_purges_a_retracted_memorys_ciphertext(lethe):
    c = lethe
    page = write(c, "tea is poisonous", POISONED, SourceType.WEB_PAGE)
    kept = write(c, "alice drinks tea")
    c.retractions.retract(reviewer(), source_ref=POISONED, reason="compromised")

    def held(memory_id: str) -> list[bytes | None]:
        with c.uow.read() as conn:
            q = sa.select(events.c.ciphertext).where(
                events.c.memory_id == memory_id, events.c.type == "memory.written"
            )
            return list(conn.execute(q).scalars())

    assert all(held(page.id))  # still in the log until compaction
    result = c.compactor.compact()
    assert result.events_rewritten >= 1
    assert held(page.id) == [None]
    assert all(held(kept.id))


def test_retractions_are_audit_events_with_ids_and_counts_never_content(lethe):
    c = lethe
    page = write(c, "tea is poisonous", POISONED, SourceType.WEB_PAGE, subject=ALICE)
    c.review.promote(reviewer(), page.id, page.version)  # a summary cites live memories only
    summary = summarise(c, "the tea summary", page.id)
    result = c.retractions.retract(officer(), source_ref=POISONED, reason="the site was compromised")
    with c.uow.read() as conn:
        rows = conn.execute(
            sa.select(events.c.type, events.c.memory_id, events.c.payload, events.c.ciphertext).where(
                events.c.type.in_(("memory.retracted", "retraction.recorded"))
            )
        ).all()
    assert sorted((r.type, r.memory_id) for r in rows) == sorted(
        [("memory.retracted", page.id), ("memory.retracted", summary.id), ("retraction.recorded", None)]
    )
    recorded = json.loads(next(r.payload for r in rows if r.type == "retraction.recorded"))
    assert recorded["retraction_id"] == result.id and recorded["requested_by"] == "officer-1"
    assert recorded["memory_ids"] == [page.id] and recorded["derived_ids"] == [summary.id]
    assert recorded["memories_retracted"] == 1 and recorded["derived_retracted"] == 1
    assert recorded["index_entries_removed"] == 2
    # The source is named by its keyed hash only: a profile URL names a person, and the
    # ledger outlives every forget.
    assert (
        recorded["source_hash"] == c.pseudonyms.source_hash("t1", POISONED) and "source_ref" not in recorded
    )
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        [ledger] = conn.execute(sa.select(retractions)).all()
    assert ledger.source_hash == recorded["source_hash"] and ledger.source_ref is None
    for r in rows:
        assert r.ciphertext is None and POISONED not in r.payload
        assert "poisonous" not in r.payload and "summary" not in r.payload and ALICE not in r.payload


def test_erasing_a_subject_turns_its_retracted_memories_forgotten(lethe):
    c = lethe
    page = write(c, "alice drinks tea", POISONED, SourceType.WEB_PAGE, subject=ALICE)
    c.retractions.retract(reviewer(), memory_id=page.id, reason="wrong")
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    assert c.erasure.get(officer(), job.id).completed_at is not None
    assert statuses(c)[("t1", page.id)] == "forgotten"


def test_a_restore_of_an_older_backup_does_not_bring_retracted_memories_back(lethe, tmp_path):
    c = lethe
    page = write(c, "tea is poisonous", POISONED, SourceType.WEB_PAGE, subject=ALICE)
    c.review.promote(reviewer(), page.id, page.version)
    other = write(c, "tea bills are fake", POISONED, SourceType.WEB_PAGE, subject=BOB)
    summary = summarise(c, "a tea summary", page.id)
    wrong = write(c, "alice drinks tea with sugar", subject=ALICE)
    quarantined = write(c, "alice's tea is green", "tool:crm/run-1", SourceType.TOOL_RESULT, subject=ALICE)
    kept = write(c, "alice drinks tea", subject=ALICE)
    manifest = create_backup(c.uow, tmp_path / "backups", log=c.log)

    c.retractions.retract(reviewer(), source_ref=POISONED, reason="compromised")
    c.retractions.retract(officer(), memory_id=wrong.id, reason="the user corrected it")
    c.review.reject(reviewer(), quarantined.id, quarantined.version, "a hijacked tool run")
    gone = {page.id, other.id, summary.id, wrong.id, quarantined.id}
    expected = statuses(c)

    report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
    assert report.retractions_reapplied == 3
    assert statuses(c) == expected
    assert {k[1] for k, v in statuses(c).items() if v == "retracted"} == gone
    assert searchable(c, agent()) == {kept.id}
    for memory_id in gone:
        with pytest.raises(errors.NotFound):
            c.memories.get(agent(), memory_id)
    assert replay.check(c.uow.engine).identical

    # The ledger was recorded again: a second restore of the same old backup re-applies it again.
    report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
    assert report.retractions_reapplied == 3 and statuses(c) == expected


def test_a_restore_of_a_backup_taken_after_the_retraction_applies_it_once(lethe, tmp_path):
    c = lethe
    page = write(c, "tea is poisonous", POISONED, SourceType.WEB_PAGE)
    c.retractions.retract(reviewer(), source_ref=POISONED, reason="compromised")
    manifest = create_backup(c.uow, tmp_path / "backups", log=c.log)
    report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
    assert report.retractions_reapplied == 0
    assert statuses(c)[("t1", page.id)] == "retracted"
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(retractions)).scalar_one() == 1
