"""Legal bases come from a documented vocabulary; people read their words (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from pydantic import ValidationError
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.erasure.legal_bases import STANDARD
from lethe.vault.model import Role
from tests.api.conftest import Api, api_settings, assert_problem, bearer
from tests.api.test_console import csrf_of, sign_in

EXTRA = {"de-bdsg-35": "BDSG § 35: erasure under German federal data protection law"}


@pytest.fixture
def extra_api(settings: Settings) -> Iterator[Api]:
    app = create_app(api_settings(settings, extra_legal_bases=EXTRA))
    with TestClient(app) as client:
        yield Api(app, client)


def _file(api: Api, basis: str, subject: str = "ana@example.com") -> object:
    officer = bearer(api.mint("privacy_officer"))
    return api.client.post(
        "/v1/erasure-requests", json={"subject_id": subject, "legal_basis": basis}, headers=officer
    )


def test_a_free_text_basis_is_a_422_listing_the_accepted_codes(api: Api) -> None:
    r = _file(api, "because I said so")
    problem = assert_problem(r, 422)
    for code in ("gdpr-art17-1a", "uk-gdpr-art17-1f", "ccpa-1798.105", "lgpd-art18-vi", "voluntary"):
        assert code in problem["detail"]
    assert "de-bdsg-35" not in problem["detail"]  # not enabled here
    assert api.container.erasure.list(api.tokens.authenticate(api.mint("auditor"))) == []
    assert_problem(_file(api, "de-bdsg-35"), 422)


def test_the_listed_codes_are_accepted_and_kept_as_codes(api: Api) -> None:
    codes = [
        "gdpr-art17-1a",
        "gdpr-art17-1f",
        "uk-gdpr-art17-1c",
        "ccpa-1798.105",
        "lgpd-art18-vi",
        "voluntary",
    ]
    for n, code in enumerate(codes):
        r = _file(api, code, f"s{n}@example.com")
        assert r.status_code == 202, r.text
    jobs = api.container.erasure.list(api.tokens.authenticate(api.mint("auditor")))
    assert sorted(j.legal_basis for j in jobs) == sorted(codes)  # the record keeps the code


def test_a_code_the_deployment_adds_is_accepted_and_listed(extra_api: Api) -> None:
    assert _file(extra_api, "de-bdsg-35").status_code == 202
    problem = assert_problem(_file(extra_api, "bdsg"), 422)
    assert "de-bdsg-35" in problem["detail"] and "gdpr-art17-1a" in problem["detail"]


def test_the_setting_is_read_as_json_and_a_bad_code_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LETHE_EXTRA_LEGAL_BASES", '{"de-bdsg-35": "BDSG § 35"}')
    assert Settings().extra_legal_bases == {"de-bdsg-35": "BDSG § 35"}
    for bad in ('{"Not A Code": "x"}', '{"gdpr-art17-1a": "redefined"}', '{"ok-code": ""}'):
        monkeypatch.setenv("LETHE_EXTRA_LEGAL_BASES", bad)
        with pytest.raises(ValidationError):
            Settings()


def test_the_console_shows_the_words_not_the_codes(extra_api: Api) -> None:
    api = extra_api
    token = api.tokens.create(Role.PRIVACY_OFFICER, "t1")[0]
    sign_in(api.client, token)
    new = api.client.get("/console/requests/new").text
    assert escape(STANDARD["lgpd-art18-vi"]) in new and escape(EXTRA["de-bdsg-35"]) in new
    form = {
        "subject_id": "ana@example.com",
        "legal_basis": "lgpd-art18-vi",
        "csrf_token": csrf_of(api.client, "/console/requests/new"),
    }
    assert api.client.post("/console/requests", data=form).status_code == 200
    assert _file(api, "de-bdsg-35", "bo@example.com").status_code == 202
    listing = api.client.get("/console/requests").text
    assert escape(STANDARD["lgpd-art18-vi"]) in listing and escape(EXTRA["de-bdsg-35"]) in listing
    assert ">lgpd-art18-vi<" not in listing and ">de-bdsg-35<" not in listing
    job = next(
        j
        for j in api.container.erasure.list(api.tokens.authenticate(token))
        if j.legal_basis == "lgpd-art18-vi"
    )
    page = api.client.get(f"/console/requests/{job.id}").text
    assert f"<dt>Legal basis</dt><dd>{escape(STANDARD['lgpd-art18-vi'])}</dd>" in page


def test_the_cli_shows_the_words(api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("COLUMNS", "400")
    runner = CliRunner()
    refused = runner.invoke(
        cli, ["forget", "--tenant", "t1", "--subject", "ana", "--basis", "because", "--no-wait"]
    )
    assert refused.exit_code != 0 and "voluntary" in refused.output
    filed = runner.invoke(
        cli, ["forget", "--tenant", "t1", "--subject", "ana", "--basis", "voluntary", "--no-wait"]
    )
    assert filed.exit_code == 0, filed.output
    assert "Voluntary: erased at the subject's wish" in filed.output
    (job,) = api.container.erasure.list(api.tokens.authenticate(api.mint("auditor")))
    shown = runner.invoke(cli, ["erasure", "show", job.id, "--tenant", "t1"])
    assert "Voluntary: erased at the subject's wish" in shown.output
    listed = runner.invoke(cli, ["erasure", "list", "--tenant", "t1"])
    assert "Voluntary: erased" in listed.output
