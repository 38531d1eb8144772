"""``/docs`` and ``/redoc`` work with no internet, and auditors get the key as a PEM file.

The pages and every asset they name are served by the app itself; the PEM served over
HTTP and the one ``lethe audit public-key --pem`` writes are what ``lethe verify`` reads.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from tests.api.conftest import Api, bearer
from tests.conftest import agent, officer, write_cmd

EXTERNAL = re.compile(r"""(?:https?:)?//[^/'"\s]""")
ASSET = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_name_no_external_url_and_every_asset_they_name_is_served(api: Api, page: str) -> None:
    r = api.client.get(page)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert EXTERNAL.findall(r.text) == [], r.text
    assert "default-src 'self'" in r.headers["content-security-policy"]
    assets = ASSET.findall(r.text)
    assert any(a.endswith(".js") for a in assets), assets
    for asset in assets:
        served = api.client.get(asset)
        assert served.status_code == 200 and len(served.content) > 1000, asset


def test_redoc_draws_no_logo_from_a_cdn(api: Api) -> None:
    scripts = [a for a in ASSET.findall(api.client.get("/redoc").text) if a.endswith(".js")]
    bundles = [api.client.get(a) for a in scripts]
    assert bundles and all(b.status_code == 200 and len(b.content) > 100_000 for b in bundles)
    assert not any(b"cdn.redoc.ly" in b.content for b in bundles)


def test_swagger_ui_validator_badge_is_off(api: Api) -> None:
    assert '"validatorUrl": null' in api.client.get("/docs").text


def forgotten_report(api: Api) -> str:
    c = api.container
    c.memories.write(agent(), write_cmd("alice likes tea"))
    job = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    c.erasure.run_pending()
    return c.erasure.get(officer(), job.id).report_id


def test_lethe_verify_accepts_the_pem_file_served_over_http(api: Api, tmp_path: Path) -> None:
    report_id = forgotten_report(api)
    auditor = bearer(api.mint("auditor"))
    r = api.client.get("/v1/audit/public-key.pem", headers=auditor)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-pem-file")
    assert 'filename="lethe-public.pem"' in r.headers["content-disposition"]
    assert r.text == api.client.get("/v1/audit/public-key", headers=auditor).json()["pem"]
    key, cert = tmp_path / "lethe-public.pem", tmp_path / "certificate.json"
    key.write_bytes(r.content)
    cert.write_bytes(api.client.get(f"/v1/erasure-reports/{report_id}", headers=auditor).content)
    result = CliRunner().invoke(cli, ["verify", str(cert), "--public-key", str(key), "--json"])
    assert result.exit_code == 0, result.output
    other_key = tmp_path / "other.pem"
    other_key.write_bytes(key.read_bytes().replace(b"A", b"B", 1))
    assert CliRunner().invoke(cli, ["verify", str(cert), "--public-key", str(other_key)]).exit_code != 0


def test_lethe_audit_public_key_pem_writes_the_file_lethe_verify_accepts(
    api: Api, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report_id = forgotten_report(api)
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    wrote = runner.invoke(cli, ["audit", "public-key", "--pem"])
    assert wrote.exit_code == 0, wrote.output
    key = tmp_path / "lethe-public.pem"
    assert key.read_text().startswith("-----BEGIN PUBLIC KEY-----") and "lethe-public.pem" in wrote.stdout
    assert runner.invoke(cli, ["report", "get", report_id, "-o", "cert.json"]).exit_code == 0
    verified = runner.invoke(cli, ["verify", "cert.json", "--public-key", "lethe-public.pem"])
    assert verified.exit_code == 0 and "VERIFIED" in verified.stdout, verified.output
    elsewhere = runner.invoke(cli, ["audit", "public-key", "--pem", "-o", "keys/auditor.pem"])
    assert elsewhere.exit_code == 2 and "cannot write" in elsewhere.output


def test_the_browser_verifier_is_one_page_that_loads_and_sends_nothing(api: Api) -> None:
    r = api.client.get("/verify")
    assert r.status_code == 200 and "window.letheVerify" in r.text
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "connect-src" not in csp  # no fetch, no XHR: default-src 'none'
    assert ASSET.findall(r.text) == [] and EXTERNAL.findall(r.text) == []
    saved = api.client.get("/verify", params={"download": 1})
    assert saved.headers["content-disposition"] == 'attachment; filename="lethe-verify.html"'
    assert saved.text == r.text
