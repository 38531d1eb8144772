"""Filing once: an erasure request retried with its Idempotency-Key (SQLite and PostgreSQL)."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from lethe.vault.store.tables import erasure_filings
from tests.api.conftest import Api, assert_problem, bearer

BODY = {"subject_id": "ana@example.com", "legal_basis": "gdpr-art17-1a", "reference": "DSR-7"}


@pytest.fixture
def officer(api: Api) -> dict[str, str]:
    return bearer(api.mint("privacy_officer"))


def _jobs(api: Api) -> list:
    return api.container.erasure.list(api.tokens.authenticate(api.mint("auditor")))


def _filings(api: Api) -> list:
    with api.container.uow.maintenance("test: inspect every tenant's rows"), api.container.uow.read() as conn:
        return list(conn.execute(sa.select(erasure_filings)))


def test_a_retry_with_the_same_key_returns_the_same_request_and_code(
    api: Api, officer: dict[str, str]
) -> None:
    headers = {**officer, "Idempotency-Key": "dsr-7-attempt"}
    first = api.client.post("/v1/erasure-requests", json=BODY, headers=headers)
    assert first.status_code == 202, first.text
    again = api.client.post("/v1/erasure-requests", json=BODY, headers=headers)
    assert again.status_code == 200, again.text
    assert (again.json()["id"], again.json()["verification_code"]) == (
        first.json()["id"],
        first.json()["verification_code"],
    )
    in_body = api.client.post(
        "/v1/erasure-requests", json={**BODY, "idempotency_key": "dsr-7-attempt"}, headers=officer
    )
    assert in_body.status_code == 200 and in_body.json()["id"] == first.json()["id"]
    assert [j.id for j in _jobs(api)] == [first.json()["id"]]


def test_a_different_key_files_a_second_request(api: Api, officer: dict[str, str]) -> None:
    one = api.client.post("/v1/erasure-requests", json=BODY, headers={**officer, "Idempotency-Key": "k-1"})
    two = api.client.post("/v1/erasure-requests", json=BODY, headers={**officer, "Idempotency-Key": "k-2"})
    assert (one.status_code, two.status_code) == (202, 202)
    assert one.json()["id"] != two.json()["id"]
    assert one.json()["verification_code"] != two.json()["verification_code"]
    assert len(_jobs(api)) == 2


def test_the_same_key_with_another_request_is_a_409_and_files_nothing(
    api: Api, officer: dict[str, str]
) -> None:
    headers = {**officer, "Idempotency-Key": "k-1"}
    assert api.client.post("/v1/erasure-requests", json=BODY, headers=headers).status_code == 202
    for changed in ({"subject_id": "bo@example.com"}, {"legal_basis": "voluntary"}, {"reference": "DSR-8"}):
        r = api.client.post("/v1/erasure-requests", json={**BODY, **changed}, headers=headers)
        problem = assert_problem(r, 409)
        assert "bo@example.com" not in r.text
        assert "Idempotency" in problem["detail"]
    assert len(_jobs(api)) == 1


def test_a_header_and_a_body_key_that_differ_are_a_422(api: Api, officer: dict[str, str]) -> None:
    r = api.client.post(
        "/v1/erasure-requests",
        json={**BODY, "idempotency_key": "a"},
        headers={**officer, "Idempotency-Key": "b"},
    )
    assert_problem(r, 422)
    assert _jobs(api) == []


def test_the_code_is_kept_sealed_and_deleted_after_the_window(api: Api, officer: dict[str, str]) -> None:
    headers = {**officer, "Idempotency-Key": "k-1"}
    first = api.client.post("/v1/erasure-requests", json=BODY, headers=headers).json()
    code = first["verification_code"]
    (row,) = _filings(api)
    assert code.encode() not in bytes(row.sealed_code) and BODY["subject_id"] not in str(row)
    assert timedelta(hours=23, minutes=59) < row.expires_at - row.filed_at <= timedelta(hours=24)
    with api.container.uow.read() as conn:  # nowhere in the log either
        assert (
            conn.execute(
                sa.text("SELECT count(*) FROM events WHERE payload LIKE :c"), {"c": f"%{code}%"}
            ).scalar_one()
            == 0
        )
    assert api.container.erasure.forget_expired_filings() == 0  # still inside its window
    with (
        api.container.uow.maintenance("test: close a filing's window, as time passing would"),
        api.container.uow.write() as conn,
    ):  # the window closes
        conn.execute(erasure_filings.update().values(expires_at=row.filed_at - timedelta(seconds=1)))
    assert api.container.erasure.forget_expired_filings() == 1
    assert _filings(api) == []
    late = api.client.post("/v1/erasure-requests", json=BODY, headers=headers)
    assert late.status_code == 202 and late.json()["id"] != first["id"]


def test_two_identical_filings_at_once_make_one_request(api: Api) -> None:
    caller = api.tokens.authenticate(api.mint("privacy_officer"))
    results: list[tuple[str, str | None]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def file() -> None:
        try:
            start.wait(10)
            job = api.container.erasure.request(
                caller, "ana@example.com", "gdpr-art17-1a", None, None, "same"
            )
            results.append((job.id, job.verification_code))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=file) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(results) == 4
    assert len(set(results)) == 1
    assert len(_jobs(api)) == 1


def test_lethe_forget_takes_an_idempotency_key(
    api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    runner = CliRunner()
    args = ["forget", "--tenant", "t1", "--subject", "ana", "--basis", "voluntary", "--no-wait"]
    one = runner.invoke(cli, [*args, "--idempotency-key", "cli-1"])
    two = runner.invoke(cli, [*args, "--idempotency-key", "cli-1"])
    assert one.exit_code == 0 and two.exit_code == 0, one.output + two.output
    codes = [re.search(r"verification code: (\S+)", out.output) for out in (one, two)]
    assert codes[0] and codes[1] and codes[0].group(1) == codes[1].group(1)
    assert len(_jobs(api)) == 1
