"""Agents own their records (issue 54, item 5), over HTTP on SQLite and PostgreSQL.

``POST /v1/memories/list`` pages through the calling agent's own active and quarantined
memories (newest first, keyset cursor); ``DELETE /v1/memories/{id}`` retracts one of them
with the reviewer's cascade and audit events; anything that is not the caller's own is a
404 and stays as it was. The client's ``list_memories``/``delete_memory`` and
``LetheStore``'s delete run over the same app.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from lethe.client import AsyncLetheClient, LetheClient, NotFound
from lethe.integrations.langgraph import LetheStore
from lethe.vault.clock import utcnow
from lethe.vault.memory.cursors import cursor_after
from lethe.vault.memory.own_records import _CURSOR
from lethe.vault.model import Role
from lethe.vault.store.projection import MEMORY_RETRACTED, RETRACTION_RECORDED
from tests.api.conftest import Api, assert_problem, bearer, memory_body

LIST = "/v1/memories/list"
WEB = {"source_type": "web_page", "source_ref": "https://example.org/p", "url": "https://example.org/p"}


def write(api: Api, headers: dict[str, str], content: str, **kw: Any) -> dict[str, Any]:
    r = api.client.post("/v1/memories", json=memory_body(content, **kw), headers=headers)
    assert r.status_code == 201, r.text
    return r.json()


def listed(api: Api, headers: dict[str, str], **body: Any) -> list[dict[str, Any]]:
    """Every page of the caller's list, followed cursor by cursor."""
    items, cursor = [], None
    for _ in range(50):
        r = api.client.post(LIST, json={**body, **({"cursor": cursor} if cursor else {})}, headers=headers)
        assert r.status_code == 200, r.text
        page = r.json()
        assert set(page) == {"items", "next_cursor"}
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError("the cursor never ended")


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [i["id"] for i in items]


def events_of(api: Api, kind: str) -> list[dict[str, Any]]:
    with api.container.uow.read() as conn:
        rows = conn.execute(sa.text("SELECT payload, memory_id FROM events WHERE type = :t"), {"t": kind})
        return [{**json.loads(p), "memory_id": m} for p, m in rows]


def search(api: Api, headers: dict[str, str], query: str = "tea") -> list[str]:
    r = api.client.post("/v1/memories/search", json={"query": query, "purpose": "support"}, headers=headers)
    assert r.status_code == 200, r.text
    return ids(r.json()["items"])


def test_an_agent_pages_through_its_own_memories_and_never_sees_anyone_elses(api: Api) -> None:
    a1, a2 = bearer(api.mint(agent="a1")), bearer(api.mint(agent="a2"))
    other_tenant, operator = bearer(api.mint(tenant="t2", agent="a1")), bearer(api.mint("operator"))
    mine = [write(api, a1, f"tea note {n}", subject_id=f"s{n % 2}@example.com") for n in range(5)]
    pending = write(api, a1, "tea from a page", provenance=WEB)
    write(api, a2, "a2's tea note")
    write(api, other_tenant, "t2's tea note")
    house = {"source_type": "operator_config", "source_ref": "deploy/config"}
    write(api, operator, "tea is served at noon", provenance=house)

    r = api.client.post(LIST, json={"limit": 2}, headers=a1)
    assert r.status_code == 200 and len(r.json()["items"]) == 2 and r.json()["next_cursor"]
    everything = listed(api, a1, limit=2)
    assert ids(everything) == [pending["id"], *reversed(ids(mine))]  # newest first, each once
    assert {i["agent_id"] for i in everything} == {"a1"} and {i["tenant_id"] for i in everything} == {"t1"}
    by_id = {i["id"]: i for i in everything}
    assert by_id[mine[0]["id"]]["content"] == "tea note 0"
    assert by_id[mine[0]["id"]]["subject_id"] == "s0@example.com"
    # Pending review: listed with its status and provenance, its content withheld until promoted.
    held = by_id[pending["id"]]
    assert held["status"] == "quarantined" and held["content"] is None
    assert held["provenance"]["source_type"] == "web_page"
    # The positive controls: the others list their own.
    assert ids(listed(api, a2)) != [] and {i["agent_id"] for i in listed(api, a2)} == {"a2"}
    assert [i["content"] for i in listed(api, other_tenant)] == ["t2's tea note"]


def test_a_subject_filter_lists_that_subjects_memories_only(api: Api) -> None:
    a1 = bearer(api.mint())
    alice = [write(api, a1, f"alice {n}", subject_id="alice@example.com") for n in range(3)]
    write(api, a1, "bob", subject_id="bob@example.com")
    found = listed(api, a1, subject_id="alice@example.com", limit=1)
    assert ids(found) == list(reversed(ids(alice)))
    # NFC: the same person however the id was composed.
    write(api, a1, "josé", subject_id="Jos\u00e9")
    assert [i["content"] for i in listed(api, a1, subject_id="Jose\u0301")] == ["josé"]


def test_superseded_and_expired_memories_are_not_listed_but_their_owner_may_delete_them(api: Api) -> None:
    a1 = bearer(api.mint())
    old = write(api, a1, "likes tea")
    new = write(api, a1, "likes coffee now", supersedes_id=old["id"])
    brief = write(api, a1, "in a meeting", kind="working_note", ttl_seconds=60)
    assert ids(listed(api, a1)) == [brief["id"], new["id"]]
    # Five minutes on, the working note has expired (the sweep has not run: the list checks the time).
    later = utcnow() + timedelta(minutes=5)
    api.container.own_records.clock = lambda: later
    assert ids(listed(api, a1)) == [new["id"]]
    assert api.client.get(f"/v1/memories/{old['id']}", headers=a1).json()["status"] == "superseded"
    for gone in (old, brief):  # both still hold their content until compaction: the owner may retract it
        assert api.client.delete(f"/v1/memories/{gone['id']}", headers=a1).status_code == 204
    assert_problem(api.client.get(f"/v1/memories/{old['id']}", headers=a1), 404)
    assert len(events_of(api, RETRACTION_RECORDED)) == 2
    assert ids(listed(api, a1)) == [new["id"]]


def test_delete_retracts_the_memory_and_its_summaries_with_an_audit_event(api: Api) -> None:
    token, info = api.tokens.create(Role.AGENT, "t1", "a1", ("support",))
    a1 = bearer(token)
    doomed, kept = write(api, a1, "Alice drinks tea at night"), write(api, a1, "Alice likes tea at noon")
    summary = write(
        api,
        a1,
        "Alice's tea habits",
        kind="task_summary",
        provenance={"source_type": "summary", "source_ref": "session-1", "sources": [doomed["id"]]},
    )
    assert set(search(api, a1)) == {doomed["id"], kept["id"]}

    r = api.client.delete(f"/v1/memories/{doomed['id']}", headers=a1)
    assert r.status_code == 204 and r.content == b""
    assert_problem(api.client.get(f"/v1/memories/{doomed['id']}", headers=a1), 404)
    assert search(api, a1) == [kept["id"]]  # the positive control is still found
    assert ids(listed(api, a1)) == [kept["id"]]  # the summary citing it went with it
    # The audit trail: one retraction, by this token, for its owner's reason, with its cascade.
    [recorded] = events_of(api, RETRACTION_RECORDED)
    assert recorded["requested_by"] == info.id and recorded["reason"] == "deleted by its owner"
    assert (recorded["memory_ids"], recorded["derived_ids"]) == ([doomed["id"]], [summary["id"]])
    retracted = {e["memory_id"]: e["cause"] for e in events_of(api, MEMORY_RETRACTED)}
    assert retracted == {doomed["id"]: "retracted", summary["id"]: "derived"}
    # A reviewer sees the same: the summary is out of the queue.
    reviewer = bearer(api.mint("reviewer"))
    assert_problem(api.client.get(f"/v1/review-queue/{summary['id']}", headers=reviewer), 404)


def test_a_second_delete_answers_204_and_records_nothing(api: Api) -> None:
    a1 = bearer(api.mint())
    item = write(api, a1, "a note to drop")
    assert api.client.delete(f"/v1/memories/{item['id']}", headers=a1).status_code == 204
    events = api.events()
    assert api.client.delete(f"/v1/memories/{item['id']}", headers=a1).status_code == 204
    assert api.events() == events and len(events_of(api, RETRACTION_RECORDED)) == 1
    # So is a delete of its own memory a reviewer retracted first.
    reviewed = write(api, a1, "a note a reviewer drops")
    body = {"memory_id": reviewed["id"], "reason": "wrong"}
    assert (
        api.client.post("/v1/retractions", json=body, headers=bearer(api.mint("reviewer"))).status_code == 202
    )
    events = api.events()
    assert api.client.delete(f"/v1/memories/{reviewed['id']}", headers=a1).status_code == 204
    assert api.events() == events


def test_anything_but_the_callers_own_memory_is_404_and_stays_intact(api: Api) -> None:
    a1, a2 = bearer(api.mint(agent="a1")), bearer(api.mint(agent="a2"))
    elsewhere = bearer(api.mint(tenant="t2", agent="a1"))
    other_purpose = bearer(api.mint(agent="a1", purposes=("billing",)))
    operator = bearer(api.mint("operator"))
    theirs = write(api, a2, "a2 wrote this about tea")
    mine = write(api, a1, "a1 wrote this about tea")
    house = write(
        api, operator, "tea at noon", provenance={"source_type": "operator_config", "source_ref": "c"}
    )
    assert api.client.get(f"/v1/memories/{house['id']}", headers=a1).status_code == 200  # a1 reads it
    events = api.events()
    refused = [
        (a1, theirs["id"]),  # another agent's
        (elsewhere, mine["id"]),  # the same agent id in another tenant
        (other_purpose, mine["id"]),  # its own, in a purpose this token does not cover
        (a1, house["id"]),  # the operator's, which it reads but does not own
        (a1, str(uuid.uuid4())),  # unknown
    ]
    details = set()
    for headers, memory_id in refused:
        doc = assert_problem(api.client.delete(f"/v1/memories/{memory_id}", headers=headers), 404)
        details.add((doc["title"], doc["detail"]))
    assert len(details) == 1 and api.events() == events  # one answer for all; nothing written
    # The positive controls: each is intact for its owner, and a1's own delete works.
    again = api.client.get(f"/v1/memories/{theirs['id']}", headers=a2)
    assert again.status_code == 200 and again.json()["content"] == "a2 wrote this about tea"
    assert ids(listed(api, a2)) == [theirs["id"]]
    assert api.client.get(f"/v1/memories/{house['id']}", headers=a1).status_code == 200
    assert api.client.delete(f"/v1/memories/{mine['id']}", headers=a1).status_code == 204


def test_a_subject_being_forgotten_is_never_listed_nor_deleted(api: Api) -> None:
    a1, officer = bearer(api.mint()), bearer(api.mint("privacy_officer"))
    kept = write(api, a1, "alice note", subject_id="alice@example.com")
    bobs = write(api, a1, "bob note", subject_id="bob@example.com")
    assert ids(listed(api, a1)) == [bobs["id"], kept["id"]]
    r = api.client.post(
        "/v1/erasure-requests",
        json={"subject_id": "bob@example.com", "legal_basis": "gdpr-art17-1a"},
        headers=officer,
    )
    assert r.status_code == 202, r.text
    # From the 202 on, before the runner has tombstoned anything:
    assert ids(listed(api, a1)) == [kept["id"]]
    assert listed(api, a1, subject_id="bob@example.com") == []
    assert_problem(api.client.delete(f"/v1/memories/{bobs['id']}", headers=a1), 404)
    api.container.erasure.run_pending()
    assert ids(listed(api, a1)) == [kept["id"]]
    assert_problem(api.client.delete(f"/v1/memories/{bobs['id']}", headers=a1), 404)


BAD_LISTS: list[dict[str, Any]] = [
    {"cursor": "not-a-cursor"},
    {"cursor": "b3duMTpub3Bl"},  # base64 of "own1:nope": well formed, naming no memory
    {"cursor": "cnExOmFiYw"},  # a review-queue cursor
    {"limit": 0},
    {"limit": 101},
    {"limit": "5"},
    {"subject_id": ""},
    {"agent_id": "a2"},
    {"tenant_id": "t2"},
]


def test_a_bad_list_request_is_a_422_problem(api: Api) -> None:
    a1 = bearer(api.mint())
    for body in BAD_LISTS:
        assert_problem(api.client.post(LIST, json=body, headers=a1), 422)
    assert api.client.post(LIST, json={"limit": 100}, headers=a1).status_code == 200


def test_another_agents_memory_as_a_cursor_reads_as_an_invalid_cursor(api: Api) -> None:
    a1, a2 = bearer(api.mint(agent="a1")), bearer(api.mint(agent="a2"))
    theirs, mine = write(api, a2, "theirs"), write(api, a1, "mine")
    foreign = assert_problem(
        api.client.post(LIST, json={"cursor": cursor_after(_CURSOR, theirs["id"])}, headers=a1), 422
    )
    unknown = assert_problem(
        api.client.post(LIST, json={"cursor": cursor_after(_CURSOR, str(uuid.uuid4()))}, headers=a1), 422
    )
    assert foreign["detail"] == unknown["detail"]  # no oracle for the other agent's ids
    # positive control
    r = api.client.post(LIST, json={"cursor": cursor_after(_CURSOR, mine["id"])}, headers=a1)
    assert r.status_code == 200 and r.json() == {"items": [], "next_cursor": None}


def test_only_agents_list_and_delete(api: Api) -> None:
    item = write(api, bearer(api.mint()), "a note")
    for role in ("reviewer", "privacy_officer", "operator", "auditor", "admin"):
        headers = bearer(api.mint(role))
        assert_problem(api.client.post(LIST, json={}, headers=headers), 403)
        assert_problem(api.client.delete(f"/v1/memories/{item['id']}", headers=headers), 403)
    assert ids(listed(api, bearer(api.mint()))) == [item["id"]]


# -- the client and LetheStore over the same app -----------------------------------------------


class ThroughTestClient(httpx.BaseTransport):
    """Sends the sync client's requests through the app's TestClient (its portal runs the app)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        r = self.api.client.request(
            request.method, str(request.url), content=request.read(), headers=dict(request.headers)
        )
        return httpx.Response(r.status_code, headers=r.headers, content=r.content)


def sync_client(api: Api, token: str) -> LetheClient:
    return LetheClient("http://testserver", token, transport=ThroughTestClient(api))


def test_the_clients_list_and_delete(api: Api) -> None:
    token = api.mint()
    with sync_client(api, token) as client:
        first = write(api, bearer(token), "first", subject_id="alice@example.com")
        second = write(api, bearer(token), "second", subject_id="bob@example.com")
        page = client.list_memories(limit=1)
        assert [m.id for m in page.items] == [second["id"]] and page.next_cursor
        rest = client.list_memories(cursor=page.next_cursor, limit=1)
        assert [m.id for m in rest.items] == [first["id"]] and rest.next_cursor is None
        assert [m.id for m in client.list_memories("alice@example.com").items] == [first["id"]]
        client.delete_memory(first["id"])
        client.delete_memory(first["id"])  # a resend answers as the first
        with pytest.raises(NotFound):
            client.delete_memory(str(uuid.uuid4()))
        assert [m.id for m in client.list_memories().items] == [second["id"]]

    async def scenario() -> None:
        async with AsyncLetheClient(
            "http://testserver", token, transport=httpx.ASGITransport(api.app)
        ) as aio:
            assert [m.id for m in (await aio.list_memories()).items] == [second["id"]]
            await aio.delete_memory(second["id"])
            assert (await aio.list_memories()).items == []

    asyncio.run(scenario())


def test_lethe_store_delete_retracts_the_keys_memory(api: Api) -> None:
    token = api.mint()
    where = ("alice", "preference")
    # user_statement: values active at once, so get reads them back (the owner's delete is what is tested)
    store = LetheStore(
        sync_client(api, token),
        purpose="support",
        agent_id="a1",
        id_key="own-records-id-key",
        source_type="user_statement",
    )
    store.put(where, "drink", {"text": "tea"})
    store.put(where, "food", {"text": "rice"})
    memory_id = store._id(store_place(where), "drink")
    store.delete(where, "drink")
    assert store.get(where, "drink") is None and store.get(where, "food") is not None
    [recorded] = events_of(api, RETRACTION_RECORDED)
    assert recorded["memory_ids"] == [memory_id] and recorded["reason"] == "deleted by its owner"
    with sync_client(api, token) as client:  # gone from the agent's own records, not a tombstone
        assert [m.id for m in client.list_memories().items] == [store._id(store_place(where), "food")]
    store.delete(where, "drink")  # deleting again, or a key never written, is a no-op
    store.delete(where, "never-written")

    async def scenario() -> None:
        aio = AsyncLetheClient("http://testserver", token, transport=httpx.ASGITransport(api.app))
        astore = LetheStore(
            aclient=aio,
            purpose="support",
            agent_id="a1",
            id_key="own-records-id-key",
            source_type="user_statement",
        )
        await astore.adelete(where, "food")
        assert await astore.aget(where, "food") is None
        await aio.aclose()

    asyncio.run(scenario())
    assert len(events_of(api, RETRACTION_RECORDED)) == 2


def store_place(namespace: tuple[str, str]) -> Any:
    from lethe.integrations.langgraph.mapping import place_of

    return place_of(namespace)
