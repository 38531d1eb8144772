"""What the CLI prints is usable by a person at an 80-column terminal, and says what it checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.cli import common
from lethe.api.settings import Settings
from tests.api.conftest import Api, bearer
from tests.api.test_docs_offline import forgotten_report

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def cli_on_store(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    return CliRunner()


@pytest.mark.parametrize("columns", [80, 200])
def test_erasure_list_shows_every_id_whole_at_any_width(
    api: Api, cli_on_store: CliRunner, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    report_id = forgotten_report(api)
    listing = api.client.get("/v1/erasure-requests", headers=bearer(api.mint("auditor"))).json()["items"]
    monkeypatch.setattr(common.console, "_width", columns)
    out = cli_on_store.invoke(cli, ["erasure", "list", "--tenant", "t1"])
    assert out.exit_code == 0, out.output
    assert set(UUID.findall(out.stdout)) == {listing[0]["id"], report_id}, out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) <= columns


def _certificate_and_key(api: Api, tmp_path: Path) -> tuple[Path, Path]:
    report_id = forgotten_report(api)
    auditor = bearer(api.mint("auditor"))
    key, cert = tmp_path / "lethe-public.pem", tmp_path / "certificate.json"
    key.write_bytes(api.client.get("/v1/audit/public-key.pem", headers=auditor).content)
    cert.write_bytes(api.client.get(f"/v1/erasure-reports/{report_id}", headers=auditor).content)
    return cert, key


def test_verify_without_a_subject_says_that_no_subject_was_confirmed(api: Api, tmp_path: Path) -> None:
    cert, key = _certificate_and_key(api, tmp_path)
    out = CliRunner().invoke(cli, ["verify", str(cert), "--public-key", str(key)])
    assert out.exit_code == 0 and "VERIFIED" in out.stdout, out.output
    assert "No subject was confirmed" in out.stdout


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"format": ', "is not valid JSON"),
        (b'{"a": "\xff"}', "is not UTF-8 text"),
        (b"[1]", "not a JSON object"),
    ],
)
def test_verify_names_what_a_broken_certificate_file_is_not(
    api: Api, tmp_path: Path, content: bytes, says: str
) -> None:
    _, key = _certificate_and_key(api, tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_bytes(content)
    out = CliRunner().invoke(cli, ["verify", str(broken), "--public-key", str(key)])
    assert out.exit_code != 0
    assert says in out.stdout, out.stdout
