"""Subject access exports on real SQLite and PostgreSQL: complete, exact, signed, and only the subject's.

The export of a subject with memories in every status must match, item for item, what
was written; its signature must verify offline and fail when any byte changes; no other
subject's (or tenant's) memory may ever appear in it (a hypothesis test over random stores).
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa
from freezegun import freeze_time
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lethe.vault import errors
from lethe.vault.audit.verify_export import verify_export
from lethe.vault.clock import utcnow
from lethe.vault.model import Caller, Provenance, Role, SourceType
from lethe.vault.store.tables import events
from tests.conftest import agent, officer, reviewer, write_cmd

ALICE, BOB = "alice@example.com", "bob@example.com"


def pem(c) -> bytes:
    return c.audit.public_key().pem.encode("ascii")


def export_doc(c, subject=ALICE, tenant="t1"):
    export = c.subject_access.export(officer(tenant), subject)
    return export, json.loads(export.document)


def written_in_every_status(c):
    """Alice's memories in every status, under two agents and two purposes, plus a summary."""
    a1, a2 = agent(), agent(agent_id="a2", purposes=("billing",))
    active = c.memories.write(a1, write_cmd("Alice prefers tea", subject=ALICE)).item
    quarantined = c.memories.write(
        a2,
        write_cmd(
            "Alice works at Example Corp", subject=ALICE, source=SourceType.WEB_PAGE, purpose="billing"
        ),
    ).item
    old = c.memories.write(a1, write_cmd("Alice lives in Lyon", subject=ALICE, kind="fact")).item
    correction = c.memories.write(
        a1, write_cmd("Alice lives in Nantes", subject=ALICE, kind="fact", supersedes_id=old.id)
    ).item
    short = c.memories.write(
        a1, write_cmd("Alice is on a call", subject=ALICE, kind="working_note", ttl_seconds=60)
    )
    summary = c.memories.write(
        a1,
        write_cmd(
            "Alice: tea, Nantes",
            subject=ALICE,
            kind="task_summary",
            provenance=Provenance(SourceType.SUMMARY, "summary-run-1", (active.id, correction.id)),
        ),
    ).item
    promoted = c.memories.write(
        a1, write_cmd("Alice likes jazz", subject=ALICE, source=SourceType.TOOL_RESULT)
    ).item
    c.review.promote(reviewer(), promoted.id, promoted.version)
    with freeze_time(utcnow() + timedelta(minutes=5)):
        assert c.memories.sweep_expired() == 1
    bob = c.memories.write(a1, write_cmd("Bob prefers coffee", subject=BOB)).item
    return {
        "active": active,
        "quarantined": quarantined,
        "superseded": old,
        "correction": correction,
        "expired": short.item,
        "summary": summary,
        "promoted": promoted,
        "bob": bob,
    }


def test_an_export_matches_item_for_item_what_was_written_in_every_status(lethe):
    w = written_in_every_status(lethe)
    export, doc = export_doc(lethe)
    items = {i["id"]: i for i in doc["items"]}
    alice = [
        w[k] for k in ("active", "quarantined", "superseded", "correction", "expired", "summary", "promoted")
    ]
    assert set(items) == {m.id for m in alice}
    for m in alice:
        got = items[m.id]
        assert (got["content"], got["agent_id"], got["purpose"], got["kind"]) == (
            m.content,
            m.agent_id,
            m.purpose,
            m.kind,
        )
        assert got["provenance"] == m.provenance.as_dict()
        assert (got["authority"], got["confidence"], got["created_at"][:19]) == (
            m.authority,
            m.confidence,
            m.created_at.strftime("%Y-%m-%dT%H:%M:%S"),
        )
    status = {
        k: items[w[k].id]["status"] for k in ("active", "quarantined", "superseded", "expired", "promoted")
    }
    assert status == {
        "active": "active",
        "quarantined": "quarantined",
        "superseded": "superseded",
        "expired": "expired",
        "promoted": "active",
    }
    assert items[w["promoted"].id]["trust"] == "verified"
    assert items[w["superseded"].id]["superseded_by"] == w["correction"].id
    assert items[w["correction"].id]["supersedes_id"] == w["superseded"].id
    assert items[w["active"].id]["cited_by"] == [w["summary"].id] == items[w["correction"].id]["cited_by"]
    counts = doc["manifest"]["counts"]
    assert counts["by_status"] == {
        "active": 3,
        "quarantined": 2,
        "superseded": 1,
        "expired": 1,
        "forgotten": 0,
    }
    assert counts["by_agent"] == {"a1": 6, "a2": 1} and counts["items"] == 7 == export.items
    assert counts["by_kind"] == {"fact": 2, "preference": 3, "task_summary": 1, "working_note": 1}
    assert doc["manifest"]["subject"]["subject_id"] == ALICE and doc["manifest"]["tenant_id"] == "t1"
    assert (
        "Bob prefers coffee" not in export.document.decode() and w["bob"].id not in export.document.decode()
    )


def test_the_export_verifies_offline_and_fails_when_any_byte_changes(lethe):
    written_in_every_status(lethe)
    export, _ = export_doc(lethe)
    key = pem(lethe)
    assert verify_export(export.document, key, tenant="t1").ok
    assert not verify_export(export.document, key, tenant="t2").ok
    rng = random.Random(7)
    positions = [*rng.sample(range(len(export.document)), 250), 0, len(export.document) - 1]
    for pos in positions:
        for delta in (1, 0x20):
            tampered = bytearray(export.document)
            tampered[pos] ^= delta
            result = verify_export(bytes(tampered), key)
            assert not result.ok, (pos, delta, result.summary())
    other_key = lethe.audit.public_key().pem.replace("A", "B", 1).encode()
    assert not verify_export(export.document, other_key).ok
    resigned = json.loads(export.document)
    resigned["items"][0]["content"] = "something else"
    assert verify_export(json.dumps(resigned).encode(), key).first_failure.name == "canonical_form"


def test_forgotten_memories_are_only_counted_after_a_subject_is_reinstated(lethe):
    for i in range(3):
        lethe.memories.write(agent(), write_cmd(f"old {i}", subject=ALICE))
    job = lethe.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    with pytest.raises(errors.SubjectForgotten):  # the fence is up as soon as a forget is filed
        lethe.subject_access.export(officer(), ALICE)
    lethe.erasure.run_pending()
    assert lethe.erasure.get(officer(), job.id).completed_at is not None
    with pytest.raises(errors.SubjectForgotten):
        lethe.subject_access.export(officer(), ALICE)
    lethe.erasure.reinstate(officer(), ALICE, "came back")
    new = lethe.memories.write(agent(), write_cmd("new life", subject=ALICE)).item
    export, doc = export_doc(lethe)
    assert [i["id"] for i in doc["items"]] == [new.id]
    assert doc["manifest"]["counts"]["forgotten"] == 3 == doc["manifest"]["counts"]["by_status"]["forgotten"]
    assert "old 0" not in export.document.decode()


def test_a_subject_under_a_legal_hold_is_exported(lethe):
    written = lethe.memories.write(agent(), write_cmd(subject=ALICE)).item
    lethe.erasure.place_hold(officer(), ALICE, "litigation")
    _, doc = export_doc(lethe)
    assert [i["content"] for i in doc["items"]] == [written.content]


def test_summaries_of_other_subjects_built_from_the_subjects_data_are_listed_without_content(lethe):
    mine = lethe.memories.write(agent(), write_cmd("Alice prefers tea", subject=ALICE)).item
    group = write_cmd(
        "Bob and Alice both drink tea",
        subject=BOB,
        kind="task_summary",
        provenance=Provenance(SourceType.SUMMARY, "team-summary", (mine.id,)),
    )
    theirs = lethe.memories.write(agent(), group).item
    export, doc = export_doc(lethe)
    assert doc["items"][0]["cited_by"] == [theirs.id]
    (elsewhere,) = doc["manifest"]["derived_elsewhere"]
    assert (elsewhere["id"], elsewhere["cites"], elsewhere["kind"]) == (theirs.id, [mine.id], "task_summary")
    assert "Bob and Alice" not in export.document.decode() and BOB not in export.document.decode()


def test_each_export_is_one_audit_event_with_who_and_how_many_never_content(lethe):
    lethe.memories.write(agent(), write_cmd("Alice prefers tea", subject=ALICE))
    export, _ = export_doc(lethe)
    with pytest.raises(errors.OutOfScope):
        lethe.subject_access.export(Caller("t1", Role.AUDITOR, principal="aud"), ALICE)
    with lethe.uow.read() as conn:
        (row,) = conn.execute(sa.select(events).where(events.c.type == "subject_access.exported")).all()
    payload = json.loads(row.payload)
    assert (
        payload["export_id"] == export.id and payload["items"] == 1 and payload["requested_by"] == "officer-1"
    )
    assert payload["document_sha256"] == export.sha256
    assert "tea" not in row.payload and ALICE not in row.payload and row.ciphertext is None


SUBJECTS = ["alice@example.com", "bob@example.com", "Zoë", "carol"]


@st.composite
def stores(draw):
    """A random store: writes by several agents, for several subjects, in two tenants; some forgotten."""
    writes = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["A", "B"]), st.sampled_from(SUBJECTS), st.sampled_from(["a1", "a2", "a3"])
            ),
            min_size=1,
            max_size=14,
        )
    )
    forgotten = draw(st.sets(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from(SUBJECTS)), max_size=2))
    return writes, forgotten


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(store=stores())
def test_another_subjects_items_never_appear_in_an_export(lethe, store):
    writes, forgotten = store
    run = uuid.uuid4().hex[:8]  # a fresh pair of tenants per example: examples share the store
    tenant = {"A": f"A{run}", "B": f"B{run}"}
    held: dict[tuple[str, str], dict[str, str]] = {}
    for n, (t, subject, agent_id) in enumerate(writes):
        content = f"note {n} {uuid.uuid4().hex}"
        item = lethe.memories.write(agent(tenant[t], agent_id), write_cmd(content, subject=subject)).item
        held.setdefault((t, subject), {})[item.id] = content
    for t, subject in forgotten:
        lethe.erasure.request(officer(tenant[t]), subject, "gdpr-art17-1a", None)
    for t in tenant:
        for subject in SUBJECTS:
            if (t, subject) in forgotten:
                with pytest.raises(errors.SubjectForgotten):
                    lethe.subject_access.export(officer(tenant[t]), subject)
                continue
            export = lethe.subject_access.export(officer(tenant[t]), subject)
            doc = json.loads(export.document)
            mine = held.get((t, subject), {})
            assert {i["id"]: i["content"] for i in doc["items"]} == mine
            text = export.document.decode()
            for other, contents in held.items():
                if other != (t, subject):
                    assert not any(mid in text or c in text for mid, c in contents.items()), other
            assert verify_export(export.document, pem(lethe), tenant=tenant[t]).ok
