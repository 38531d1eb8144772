"""Reads stop at acceptance: from the 202 of an erasure request, no agent read returns the
subject, with the runner not running (so only the read fence hides it), whatever holds, while
paused, and on a second container sharing the store whose caches were warm (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from lethe.api.bootstrap import Container, build
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.errors import NotFound
from lethe.vault.model import SearchQuery
from tests.api.conftest import Api, api_settings, bearer, memory_body
from tests.conftest import agent

ANA, BO = "ana@example.com", "bo@example.com"
ROUNDS = 25


@pytest.fixture
def api(settings: Settings) -> Iterator[Api]:
    """The server with its erasure runner idle: nothing but the read fence can hide a subject."""
    app = create_app(api_settings(settings, erasure_interval_seconds=3600.0))
    with TestClient(app) as client:
        yield Api(app, client)


def _seed(api: Api) -> tuple[dict[str, str], list[str], str]:
    a = bearer(api.mint())
    # Bo first: the subject's newer memories rank above his, so a fenced row left in the
    # ranking would take a slot of a page (see the limit-1 search below).
    bo = api.client.post("/v1/memories", json=memory_body("Bo prefers black tea", subject_id=BO), headers=a)
    ana = []
    for text in ("Ana prefers green tea", "Ana's tea order is oolong", "Ana drinks tea at noon"):
        r = api.client.post("/v1/memories", json=memory_body(text, subject_id=ANA), headers=a)
        assert r.status_code == 201, r.text
        ana.append(r.json()["id"])
    return a, ana, bo.json()["id"]


def _seen(api: Api, a: dict[str, str], ana: list[str]) -> tuple[set[str], set[str]]:
    """One round of the read loop: the ids a search returns, and the ids GET still serves."""
    r = api.client.post(
        "/v1/memories/search", json={"query": "tea", "purpose": "support", "limit": 20}, headers=a
    )
    assert r.status_code == 200, r.text
    found = {i["id"] for i in r.json()["items"]}
    served = {m for m in ana if api.client.get(f"/v1/memories/{m}", headers=a).status_code == 200}
    return found, served


def _file(api: Api, officer: dict[str, str]) -> str:
    r = api.client.post(
        "/v1/erasure-requests", json={"subject_id": ANA, "legal_basis": "gdpr-art17-1b"}, headers=officer
    )
    assert r.status_code == 202, r.text
    return r.json()["id"]


def _loop_sees_nothing(api: Api, a: dict[str, str], ana: list[str], bo: str) -> None:
    for _ in range(ROUNDS):
        found, served = _seen(api, a, ana)
        assert not (found & set(ana)) and not served
        assert bo in found  # the search itself still works
    one = api.client.post(
        "/v1/memories/search", json={"query": "tea", "purpose": "support", "limit": 1}, headers=a
    )
    assert [i["id"] for i in one.json()["items"]] == [bo]  # ranked without the subject, not dropped after


def _control(api: Api, a: dict[str, str], ana: list[str], bo: str) -> None:
    for _ in range(3):  # the same loop sees the subject just before the filing (and warms the caches)
        found, served = _seen(api, a, ana)
        assert set(ana) <= found and served == set(ana) and bo in found


def _status(api: Api, officer: dict[str, str], job_id: str) -> str:
    return api.client.get(f"/v1/erasure-requests/{job_id}", headers=officer).json()["status"]


def test_reads_stop_at_the_202_with_the_runner_idle(api: Api) -> None:
    a, ana, bo = _seed(api)
    officer = bearer(api.mint("privacy_officer"))
    _control(api, a, ana, bo)
    job_id = _file(api, officer)
    _loop_sees_nothing(api, a, ana, bo)
    assert _status(api, officer, job_id) == "received"  # nothing tombstoned: the read fence alone


def test_a_hold_after_the_202_keeps_the_data_for_the_officer_not_for_agents(api: Api) -> None:
    a, ana, bo = _seed(api)
    officer = bearer(api.mint("privacy_officer"))
    _control(api, a, ana, bo)
    job_id = _file(api, officer)
    hold = api.client.post(
        "/v1/legal-holds", json={"subject_id": ANA, "reason": "litigation L-3"}, headers=officer
    )
    assert hold.status_code in (200, 201), hold.text
    _loop_sees_nothing(api, a, ana, bo)
    api.container.erasure.run_pending()  # the runner meets the hold: blocked, nothing destroyed
    assert _status(api, officer, job_id) == "blocked"
    _loop_sees_nothing(api, a, ana, bo)
    export = api.client.post("/v1/subject-access-requests", json={"subject_id": ANA}, headers=officer)
    assert export.status_code == 200, export.text
    assert {i["id"] for i in export.json()["items"]} == set(ana)  # the officer's access is kept


def test_without_a_hold_the_export_of_an_accepted_erasure_is_refused(api: Api) -> None:
    _, _, _ = _seed(api)
    officer = bearer(api.mint("privacy_officer"))
    _file(api, officer)
    r = api.client.post("/v1/subject-access-requests", json={"subject_id": ANA}, headers=officer)
    assert r.status_code == 409


def test_a_paused_request_keeps_reads_fenced(api: Api) -> None:
    a, ana, bo = _seed(api)
    officer = bearer(api.mint("privacy_officer"))
    _control(api, a, ana, bo)
    job_id = _file(api, officer)
    paused = api.client.post(f"/v1/erasure-requests/{job_id}/pause", headers=officer)
    assert paused.status_code == 200, paused.text
    api.container.erasure.run_pending()  # a paused job runs no step
    assert _status(api, officer, job_id) == "received"
    _loop_sees_nothing(api, a, ana, bo)


def test_reinstatement_reopens_reads(api: Api) -> None:
    a, ana, _bo = _seed(api)
    officer = bearer(api.mint("privacy_officer"))
    _file(api, officer)
    api.container.erasure.run_pending()
    r = api.client.post(
        "/v1/subject-reinstatements", json={"subject_id": ANA, "reason": "returned"}, headers=officer
    )
    assert r.status_code in (200, 201), r.text
    new = api.client.post(
        "/v1/memories", json=memory_body("Ana now prefers mint tea", subject_id=ANA), headers=a
    )
    assert new.status_code == 201, new.text
    found, served = _seen(api, a, [new.json()["id"]])
    assert new.json()["id"] in found and served == {new.json()["id"]}
    assert not (found & set(ana))  # the old generation stays shredded


@pytest.fixture
def second(api: Api, settings: Settings) -> Iterator[Container]:
    """Another container on the same store, built separately: a second node's process."""
    c = build(settings)
    yield c
    c.close()


def test_a_second_container_with_warm_caches_stops_serving_at_the_202(api: Api, second: Container) -> None:
    _a, ana, bo = _seed(api)
    officer = bearer(api.mint("privacy_officer"))
    caller = agent()
    query = SearchQuery("tea", "support", limit=20)
    for _ in range(3):  # warm: the second node keeps the scope, its opened vectors and results
        assert set(ana) <= {i.id for i in second.search.search(caller, query).items}
        assert second.memories.get(caller, ana[0]).id == ana[0]
    _file(api, officer)  # filed on the first node
    for _ in range(ROUNDS):
        ids = {i.id for i in second.search.search(caller, query).items}
        assert not (ids & set(ana)) and bo in ids
        for m in ana:
            with pytest.raises(NotFound):
                second.memories.get(caller, m)
