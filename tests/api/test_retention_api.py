"""A reviewer's retention confirmation over HTTP and the CLI (issue 12, item 4). SQLite and PostgreSQL."""

from __future__ import annotations

from typer.testing import CliRunner

from lethe.api.cli import app as cli
from tests.api.conftest import Api, assert_problem, bearer
from tests.conftest import agent, write_cmd


def test_confirm_retention_over_http_and_the_cli(api: Api, settings, monkeypatch) -> None:
    c = api.container
    item = c.memories.write(agent(), write_cmd("alice likes tea", kind="fact")).item
    url = f"/v1/memories/{item.id}/retention"
    assert_problem(api.client.post(url, json={"expected_version": 1}, headers=bearer(api.mint())), 403)
    r = api.client.post(
        url, json={"expected_version": 1, "ttl_seconds": 400 * 86400}, headers=bearer(api.mint("reviewer"))
    )
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 2
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    args = ["review", "confirm", item.id, "--tenant", "t1", "--expected-version", "2", "--ttl-days", "500"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert '"version": 3' in result.stdout
