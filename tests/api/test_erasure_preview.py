"""``dry_run`` on ``POST /v1/erasure-requests``: a preview that changes nothing and that the
forget then matches, count for count (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from typer.testing import CliRunner

from lethe.api.cli import app as cli_app
from lethe.api.settings import Settings
from lethe.vault.erasure.backup import create_backup
from lethe.vault.model import Provenance, SourceType
from lethe.vault.store.tables import erasure_jobs, forgotten_subjects, subject_keys
from tests.api.conftest import Api, assert_problem, bearer, memory_body
from tests.conftest import agent, officer, reviewer, write_cmd

BASIS = "gdpr-art17-1a"


def _seed(api: Api, subject: str, tmp_path: Path) -> dict[str, Any]:
    """Two memories of the subject (one active, one quarantined), a summary of another subject
    built on one of them and a summary of that summary, an unrelated memory, a backup."""
    c = api.container
    a = c.memories.write(agent(), write_cmd("tea with lemon", subject=subject)).item
    c.memories.write(agent(), write_cmd("tea at noon", subject=subject, source=SourceType.WEB_PAGE))
    bob = c.memories.write(agent(), write_cmd("bob drinks coffee", subject="bob")).item
    built = Provenance(SourceType.SUMMARY, "summariser", (a.id, bob.id))
    summary = c.memories.write(
        agent(), write_cmd("the household drinks tea", subject="bob", provenance=built)
    )
    c.review.promote(reviewer(), summary.item.id, 1)  # a summary may cite only a live memory
    on_top = Provenance(SourceType.SUMMARY, "summariser", (summary.item.id,))
    meta = c.memories.write(agent(), write_cmd("summary of summaries", subject="carol", provenance=on_top))
    create_backup(c.uow, tmp_path / "backups", log=c.log)
    return {"derived": sorted([summary.item.id, meta.item.id])}


def _state(api: Api) -> tuple[int, int, int, int]:
    """Events, erasure jobs, fences and key rows: what a preview must leave as it was."""
    with api.container.uow.maintenance("test: inspect every tenant's rows"), api.container.uow.read() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (sa.table("events"), erasure_jobs, forgotten_subjects, subject_keys)
        )


def test_the_preview_changes_nothing_and_the_forget_then_does_what_it_said(api: Api, tmp_path: Path) -> None:
    subject = f"{uuid.uuid4()}@example.com"
    seeded = _seed(api, subject, tmp_path)
    officer_h = bearer(api.mint("privacy_officer"))
    before = _state(api)

    r = api.client.post(
        "/v1/erasure-requests",
        json={"subject_id": subject, "legal_basis": BASIS, "dry_run": True},
        headers=officer_h,
    )
    assert r.status_code == 200, r.text
    preview = r.json()
    assert {"memories", "derived", "sealed_vectors", "index_entries", "backups", "legal_holds"} <= set(
        preview
    )
    assert "open_requests" in preview and "verification_code" not in preview and "id" not in preview
    assert preview["memories"] == {"active": 1, "quarantined": 1}
    assert [d["id"] for d in preview["derived"]] == seeded["derived"]
    assert len(preview["backups"]) == 1 and preview["key_generations"] == 1
    assert preview["legal_holds"] == [] and preview["open_requests"] == [] and not preview["nothing_held"]
    assert subject not in r.text

    # Nothing changed: no request, no fence, no event, no key; the subject's writes still go in.
    assert _state(api) == before
    assert api.client.get("/v1/erasure-requests", headers=officer_h).json()["items"] == []
    written = api.client.post(
        "/v1/memories", json=memory_body(subject_id=subject), headers=bearer(api.mint())
    )
    assert written.status_code == 201, written.text
    preview = api.client.post(
        "/v1/erasure-requests",
        json={"subject_id": subject, "legal_basis": BASIS, "dry_run": True},
        headers=officer_h,
    ).json()
    assert preview["memories"] == {"active": 2, "quarantined": 1}

    # The forget then does exactly that.
    filed = api.client.post(
        "/v1/erasure-requests", json={"subject_id": subject, "legal_basis": BASIS}, headers=officer_h
    )
    assert filed.status_code == 202
    api.container.erasure.run_pending()
    job = api.client.get(f"/v1/erasure-requests/{filed.json()['id']}", headers=officer_h).json()
    ev = {s["step"]: s["evidence"] for s in job["steps"]}
    tomb, purge, keys = ev["tombstoned"], ev["derived_purged"], ev["key_destroyed"]
    assert tomb["memories_forgotten"] == sum(preview["memories"].values()) == 3
    assert purge["derived_ids"] == [d["id"] for d in preview["derived"]]
    assert tomb["index_entries_before"] + purge["index_entries_before"] == preview["index_entries"] > 0
    assert tomb["sealed_vectors_before"] + purge["sealed_vectors_purged"] == preview["sealed_vectors"]
    assert keys["keys_destroyed"] == preview["key_generations"]
    backup_copies = next(k for k in keys["key_copies"]["copies"] if "backups" in k["copy"])
    assert backup_copies["count"] == len(preview["backups"])


def test_the_preview_shows_holds_and_open_requests_and_is_for_privacy_officers(api: Api) -> None:
    subject = f"{uuid.uuid4()}@example.com"
    c = api.container
    c.memories.write(agent(), write_cmd("tea", subject=subject))
    body = {"subject_id": subject, "legal_basis": BASIS, "dry_run": True}
    hold = c.erasure.place_hold(officer(), subject, "litigation, case 42")
    officer_h = bearer(api.mint("privacy_officer"))
    held = api.client.post("/v1/erasure-requests", json=body, headers=officer_h).json()
    assert [h["id"] for h in held["legal_holds"]] == [hold.id]
    c.erasure.lift_hold(officer(), hold.id)
    job = c.erasure.request(officer(), subject, BASIS, None)
    shown = api.client.post("/v1/erasure-requests", json=body, headers=officer_h).json()
    assert [o["id"] for o in shown["open_requests"]] == [job.id] and shown["legal_holds"] == []
    for role in ("agent", "auditor", "reviewer"):
        assert_problem(
            api.client.post("/v1/erasure-requests", json=body, headers=bearer(api.mint(role))), 403
        )
    nobody = {**body, "subject_id": f"{uuid.uuid4()}@example.com"}
    empty = api.client.post("/v1/erasure-requests", json=nobody, headers=officer_h).json()
    assert empty["nothing_held"] is True and empty["memories"] == {} and empty["backups"] == []


def test_lethe_forget_dry_run_prints_the_preview_and_files_nothing(
    api: Api, settings: Settings, monkeypatch: Any
) -> None:
    c = api.container
    subject = f"{uuid.uuid4()}@example.com"
    c.memories.write(agent(), write_cmd("tea", subject=subject))
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    args = ["forget", "--tenant", "t1", "--subject", subject, "--basis", BASIS, "--dry-run"]
    out = CliRunner().invoke(cli_app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["memories"] == {"active": 1}
    text = CliRunner().invoke(cli_app, args)
    assert text.exit_code == 0 and "nothing was filed" in text.output and "1 to forget" in text.output
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(erasure_jobs)).scalar_one() == 0
