"""The KPIs over HTTP, on /metrics and in the CLI (issue 12, item 6). SQLite and PostgreSQL.

``GET /v1/audit/kpis`` answers the auditor's tenant; ``/metrics`` shows the store-wide
figures as gauges (no tenant named: it is unauthenticated); ``lethe audit kpis --json``
prints the HTTP body.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from lethe.vault.model import Provenance, SourceType
from tests.api.conftest import Api, bearer
from tests.conftest import agent, officer, write_cmd

GAUGES = (
    "lethe_kpis_up 1.0",
    "lethe_memories_live 2.0",
    "lethe_attribution_complete_ratio 1.0",
    "lethe_memory_age_median_seconds",
    'lethe_deletion_propagation_lag_seconds{quantile="0.95"}',
    "lethe_retractions 1.0",
    "lethe_memories_retracted 1.0",
    "lethe_erasure_requests_open 0.0",
    "lethe_erasure_requests_overdue 0.0",
)


def some_history(api: Api) -> None:
    c = api.container
    c.memories.write(agent(), write_cmd("alice likes tea"))
    c.memories.write(agent(tenant="t2"), write_cmd("bob likes tea", subject="bob"))
    bad = Provenance(SourceType.USER_STATEMENT, "bad-turn")
    c.memories.write(agent(), write_cmd("wrong", subject="carol", provenance=bad))
    c.retractions.retract(officer(), source_ref="bad-turn", reason="wrong")
    c.memories.write(agent(), write_cmd("dan likes tea", subject="dan@example.com"))
    c.erasure.request(officer(), "dan@example.com", "gdpr-art17-1a", "DSR-1")
    c.erasure.run_pending()


def test_an_auditor_reads_the_tenants_kpis_and_metrics_show_the_store(api: Api) -> None:
    some_history(api)
    r = api.client.get("/v1/audit/kpis", headers=bearer(api.mint("auditor")))
    assert r.status_code == 200, r.text
    k = r.json()
    assert k["tenant_id"] == "t1" and k["live_memories"] == 1 and k["attribution_complete_share"] == 1.0
    assert (k["retractions"], k["memories_retracted"], k["erasures_completed"]) == (1, 1, 1)
    assert k["deletion_lag_p50_seconds"] is not None and k["open_requests"] == 0
    other = api.client.get("/v1/audit/kpis", headers=bearer(api.mint("auditor", tenant="t2"))).json()
    assert (other["live_memories"], other["retractions"], other["erasures_completed"]) == (1, 0, 0)
    assert api.client.get("/v1/audit/kpis", headers=bearer(api.mint())).status_code == 403
    text = api.client.get("/metrics").text
    for gauge in GAUGES:
        assert gauge in text, gauge
    assert "t1" not in text.split("lethe_kpis_up")[1]  # no tenant named on the public endpoint


@pytest.fixture
def runner(api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    return CliRunner()


def test_lethe_audit_kpis_json_is_the_http_body(api: Api, runner: CliRunner) -> None:
    some_history(api)
    http = api.client.get("/v1/audit/kpis", headers=bearer(api.mint("auditor"))).json()
    result = runner.invoke(cli, ["audit", "kpis", "--tenant", "t1", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    for doc in (shown, http):
        doc.pop("computed_at")
        doc.pop("median_age_seconds")  # the two were computed a moment apart
    assert shown == http
    table = runner.invoke(cli, ["audit", "kpis", "--tenant", "t1"])
    assert table.exit_code == 0 and "attribution complete share" in table.stdout
