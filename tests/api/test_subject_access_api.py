"""Subject access over HTTP and the CLI: the signed export, its renderings for people, its refusals.

Runs on SQLite and PostgreSQL through the real app and the real ``lethe`` commands.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from pypdf import PdfReader
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from lethe.vault.audit.verify_export import verify_export
from lethe.vault.model import Role
from tests.api.conftest import Api, assert_problem, bearer
from tests.conftest import agent, officer, write_cmd

ALICE = "alice@example.com"


def seeded(api: Api) -> tuple[dict[str, str], str]:
    c = api.container
    item = c.memories.write(agent(), write_cmd("Alice prefers <b>tea</b> & biscuits", subject=ALICE)).item
    return bearer(api.mint(Role.PRIVACY_OFFICER)), item.id


def test_an_officer_gets_the_signed_export_and_it_verifies_with_the_published_key(api: Api) -> None:
    officer_headers, item_id = seeded(api)
    r = api.client.post("/v1/subject-access-requests", json={"subject_id": ALICE}, headers=officer_headers)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert r.headers["cache-control"] == "no-store"
    doc = r.json()
    assert set(doc) == {"manifest", "items", "signature"}
    assert [i["id"] for i in doc["items"]] == [item_id]
    key = api.client.get("/v1/audit/public-key", headers=bearer(api.mint(Role.AUDITOR))).json()["pem"]
    assert verify_export(r.content, key.encode(), tenant="t1").ok


def test_the_html_and_pdf_speak_plainly_first_and_list_every_item(api: Api) -> None:
    officer_headers, item_id = seeded(api)
    html = api.client.post(
        "/v1/subject-access-requests?format=html", json={"subject_id": ALICE}, headers=officer_headers
    )
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    page = html.text
    assert page.index("What we hold about you") < page.index("Your preferences") < page.index(item_id)
    assert "Alice prefers &lt;b&gt;tea&lt;/b&gt; &amp; biscuits" in page and "<b>tea" not in page
    assert "default-src 'none'" in page and "VERIFIED" in page and "lethe verify-export" in page
    pdf = api.client.post(
        "/v1/subject-access-requests?format=pdf", json={"subject_id": ALICE}, headers=officer_headers
    )
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    assert "attachment" in pdf.headers["content-disposition"]
    reader = PdfReader(io.BytesIO(pdf.content))
    first = reader.pages[0].extract_text()
    assert "What we hold about you" in first and "Your preferences" in first
    rest = " ".join(p.extract_text() for p in reader.pages[1:])
    assert "biscuits" in rest and item_id[:8] in rest.replace("\n", "")


def test_a_forgotten_subject_is_a_409_problem_that_does_not_echo_the_subject(api: Api) -> None:
    officer_headers, _ = seeded(api)
    api.container.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    r = api.client.post("/v1/subject-access-requests", json={"subject_id": ALICE}, headers=officer_headers)
    doc = assert_problem(r, 409)
    assert ALICE not in r.text and "forgotten" in doc["detail"]
    bad = api.client.post("/v1/subject-access-requests", json={"subject_id": ""}, headers=officer_headers)
    assert_problem(bad, 422)


def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    return CliRunner()


def test_the_cli_exports_a_subject_and_verifies_the_export_offline(
    api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seeded(api)
    runner = cli_env(settings, monkeypatch)
    out, key = tmp_path / "export.json", tmp_path / "key.pem"
    r = runner.invoke(cli, ["subject", "export", "--tenant", "t1", "--subject", ALICE, "-o", str(out)])
    assert r.exit_code == 0, r.output
    key.write_text(api.container.audit.public_key().pem)
    ok = runner.invoke(cli, ["verify-export", str(out), "--public-key", str(key), "--tenant", "t1", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["ok"] is True
    tampered = tmp_path / "tampered.json"
    tampered.write_bytes(out.read_bytes().replace(b"biscuits", b"biscuitz"))
    bad = runner.invoke(cli, ["verify-export", str(tampered), "--public-key", str(key)])
    assert bad.exit_code == 1 and "FAILED" in bad.stdout
    pdf = tmp_path / "export.pdf"
    r = runner.invoke(
        cli, ["subject", "export", "--tenant", "t1", "--subject", ALICE, "--format", "pdf", "-o", str(pdf)]
    )
    assert r.exit_code == 0 and pdf.read_bytes().startswith(b"%PDF")
    refused = runner.invoke(
        cli, ["subject", "export", "--tenant", "t1", "--subject", ALICE, "--format", "pdf"]
    )
    assert refused.exit_code == 2
    api.container.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    fenced = runner.invoke(cli, ["subject", "export", "--tenant", "t1", "--subject", ALICE])
    assert fenced.exit_code == 1 and "forgotten" in fenced.output
