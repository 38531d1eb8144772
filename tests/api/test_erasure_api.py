"""Privacy-officer and auditor endpoints over HTTP (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.api.conftest import Api, assert_problem, bearer, memory_body

BASIS = "gdpr-art17-1a"


@pytest.fixture
def officer(api: Api) -> dict[str, str]:
    return bearer(api.mint("privacy_officer"))


def test_a_request_runs_to_completion_and_shows_its_steps(api: Api, officer: dict[str, str]) -> None:
    agent = bearer(api.mint())
    subject = f"{uuid.uuid4()}@example.com"
    item = api.client.post("/v1/memories", json=memory_body(subject_id=subject), headers=agent).json()

    r = api.client.post(
        "/v1/erasure-requests",
        json={"subject_id": subject, "legal_basis": BASIS, "reference": "T-1"},
        headers=officer,
    )
    assert r.status_code == 202
    accepted = r.json()
    assert set(accepted) == {"id", "status", "received_at", "due_at", "verification_code"}
    assert accepted["status"] == "received"
    code = accepted["verification_code"]

    api.container.erasure.run_pending()
    auditor = bearer(api.mint("auditor"))
    for who in (officer, auditor):
        job = api.client.get(f"/v1/erasure-requests/{accepted['id']}", headers=who).json()
        assert job["completed_at"] is not None and job["overdue"] is False and "report_id" in job
        assert [s["step"] for s in job["steps"]][:5] == [
            "received",
            "tombstoned",
            "derived_purged",
            "key_destroyed",
            "verified",
        ]
        assert subject not in str(job)
        assert code not in str(job)  # shown once, in the 202 answer only
    assert_problem(api.client.get(f"/v1/memories/{item['id']}", headers=agent), 404)

    listed = api.client.get("/v1/erasure-requests", headers=auditor).json()["items"]
    assert [j["id"] for j in listed] == [accepted["id"]]
    status = job["status"]
    assert (
        len(
            api.client.get("/v1/erasure-requests", params={"status": status}, headers=officer).json()["items"]
        )
        == 1
    )
    assert (
        api.client.get("/v1/erasure-requests", params={"status": "received"}, headers=officer).json()["items"]
        == []
    )
    assert (
        api.client.get("/v1/erasure-requests", params={"overdue": True}, headers=officer).json()["items"]
        == []
    )

    # The erasure fence: writes for the subject are refused until a reinstatement.
    assert_problem(api.client.post("/v1/memories", json=memory_body(subject_id=subject), headers=agent), 409)
    r = api.client.post(
        "/v1/subject-reinstatements", json={"subject_id": subject, "reason": "consent"}, headers=officer
    )
    assert r.status_code == 201 and r.json()["generation"] >= 2
    assert (
        api.client.post("/v1/memories", json=memory_body(subject_id=subject), headers=agent).status_code
        == 201
    )


def test_legal_hold_blocks_a_request_until_lifted(api: Api, officer: dict[str, str]) -> None:
    subject = f"{uuid.uuid4()}@example.com"
    r = api.client.post(
        "/v1/legal-holds", json={"subject_id": subject, "reason": "litigation"}, headers=officer
    )
    assert r.status_code == 201
    hold = r.json()
    assert hold["lifted_at"] is None and subject not in str(hold)
    before = api.events()
    r = api.client.post(
        "/v1/erasure-requests", json={"subject_id": subject, "legal_basis": BASIS}, headers=officer
    )
    assert assert_problem(r, 409)["title"] == "Legal hold active"
    assert api.events() == before
    assert api.client.delete(f"/v1/legal-holds/{hold['id']}", headers=officer).status_code == 204
    assert_problem(api.client.delete(f"/v1/legal-holds/{hold['id']}", headers=officer), 404)
    r = api.client.post(
        "/v1/erasure-requests", json={"subject_id": subject, "legal_basis": BASIS}, headers=officer
    )
    assert r.status_code == 202


def test_jobs_and_holds_of_another_tenant_are_not_found(api: Api, officer: dict[str, str]) -> None:
    other = bearer(api.mint("privacy_officer", tenant="t2"))
    job = api.client.post(
        "/v1/erasure-requests", json={"subject_id": "x@example.com", "legal_basis": BASIS}, headers=officer
    ).json()
    hold = api.client.post(
        "/v1/legal-holds", json={"subject_id": "y@example.com", "reason": "litigation"}, headers=officer
    ).json()
    assert_problem(api.client.get(f"/v1/erasure-requests/{job['id']}", headers=other), 404)
    assert api.client.get("/v1/erasure-requests", headers=other).json()["items"] == []
    assert_problem(api.client.delete(f"/v1/legal-holds/{hold['id']}", headers=other), 404)


def test_request_bodies_cannot_name_a_tenant(api: Api, officer: dict[str, str]) -> None:
    before = api.events()
    body = {"subject_id": "x@example.com", "legal_basis": BASIS, "tenant_id": "t2"}
    assert_problem(api.client.post("/v1/erasure-requests", json=body, headers=officer), 422)
    assert api.events() == before


def test_forget_requests_and_completions_are_counted(api: Api, officer: dict[str, str]) -> None:
    api.client.post(
        "/v1/erasure-requests", json={"subject_id": "z@example.com", "legal_basis": BASIS}, headers=officer
    )
    assert "lethe_forget_requests_total 1.0" in api.client.get("/metrics").text
    deadline = time.monotonic() + 15  # the background runner picks the job up within a second or so
    while "lethe_forget_completions_total 1.0" not in api.client.get("/metrics").text:
        assert time.monotonic() < deadline, "the erasure runner did not complete the job"
        time.sleep(0.2)
