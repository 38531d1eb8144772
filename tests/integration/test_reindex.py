"""A rebuildable search index (issue 12, item 5): ``lethe reindex`` and ``replay --check``.

SQLite and PostgreSQL. The store holds every kind of history the index must follow
(updates, corrections, promotion, rejection, retraction by source, expiry, erasure);
dropping the index and rebuilding it from the log and the keys gives the same index and
the same search results for a fixed query set, and records its recipe. ``replay --check``
compares the index too, so a stale entry (a retracted memory still indexed) or a
missing one is reported.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from lethe.api.bootstrap import build
from lethe.api.cli import app as cli
from lethe.api.store_lease import exclusive_lease, serve_lease
from lethe.vault.clock import utcnow
from lethe.vault.memory.reindex import CURRENT_RECIPE, SEARCH_INDEX
from lethe.vault.model import Provenance, SearchQuery, SourceType
from lethe.vault.store import replay
from lethe.vault.store.tables import index_recipes, search_index, search_postings
from tests.conftest import agent, officer, reviewer, write_cmd

QUERIES = ("tea", "coffee sugar", "alice tea", "green oolong", "page", "bob", "summary of tea", "nothing")
POISON = "https://evil.example/page"


def populate(c) -> None:  # type: ignore[no-untyped-def]
    """A store with every transition that adds or removes index entries."""
    w = c.memories.write
    tea = w(agent(), write_cmd("alice drinks tea with sugar", subject="alice@example.com")).item
    w(
        agent(),
        write_cmd(
            "alice drinks green oolong tea", subject="alice@example.com", id=tea.id, expected_version=1
        ),
    )
    old = w(agent(), write_cmd("bob likes coffee", subject="bob@example.com")).item
    w(agent(), write_cmd("bob likes coffee with sugar", subject="bob@example.com", supersedes_id=old.id))
    web = w(agent(), write_cmd("tea page claims", subject="bob@example.com", source=SourceType.WEB_PAGE)).item
    c.review.promote(reviewer(), web.id, web.version)
    bad = w(
        agent(), write_cmd("tea is poison page", subject="bob@example.com", source=SourceType.WEB_PAGE)
    ).item
    c.review.reject(reviewer(), bad.id, bad.version, reason="wrong")
    w(agent(), write_cmd("quarantined tea page", subject="carol", source=SourceType.WEB_PAGE))
    for i in range(3):
        prov = Provenance(SourceType.TOOL_RESULT, POISON)
        w(agent(), write_cmd(f"poisoned tea fact {i}", subject="dan", provenance=prov))
    c.retractions.retract(officer(), source_ref=POISON, reason="compromised page")
    w(agent(), write_cmd("a working note about tea", subject="erin", kind="working_note", ttl_seconds=60))
    w(agent(), write_cmd("frank drinks tea daily", subject="frank@example.com"))
    job = c.erasure.request(officer(), "frank@example.com", "gdpr-art17-1a", "T-1")
    c.erasure.run_pending()
    assert c.erasure.get(officer(), job.id).completed_at is not None
    for i in range(40):
        w(
            agent(purposes=("support", "billing")),
            write_cmd(f"bulk tea note {i} alice coffee", subject=f"s{i % 7}"),
        )
    later = utcnow() + timedelta(hours=1)
    c.memories.clock = lambda: later
    assert c.memories.sweep_expired() == 1
    c.memories.clock = utcnow


def results(c) -> dict[str, list[tuple[str, dict]]]:  # type: ignore[no-untyped-def]
    out = {}
    for q in QUERIES:
        found = c.search.search(agent(), SearchQuery(q, "support", limit=50, token_budget=100_000)).items
        # recency (and so the rounded total) moves with the clock between two searches
        out[q] = [
            (i.id, {k: v for k, v in (i.score or {}).items() if k not in ("recency", "total")}) for i in found
        ]
    return out


def index_rows(c) -> set[tuple]:  # type: ignore[no-untyped-def]
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return {tuple(r) for r in conn.execute(sa.select(search_index))}


def drop_index(c) -> None:  # type: ignore[no-untyped-def]
    """Lose the index by hand, outside Lethe (so no scope gets a new change token)."""
    with c.uow.maintenance("test: alter rows as their owner"), c.uow.write() as conn:
        conn.execute(search_postings.delete())
        conn.execute(search_index.delete())


def results_elsewhere(settings) -> dict[str, list[tuple[str, dict]]]:  # type: ignore[no-untyped-def]
    """``results`` from a process that keeps no scope yet (one started after the loss)."""
    other = build(settings)
    try:
        return results(other)
    finally:
        other.close()


def test_reindex_of_a_dropped_index_gives_identical_search_results(lethe, settings):
    c = lethe
    populate(c)
    before, rows_before = results(c), index_rows(c)
    assert before["tea"] and before["coffee sugar"]
    drop_index(c)
    # Without the index, lexical relevance is gone (the test can fail). The process that
    # searched before keeps its scopes' term rows until a token changes, as reindex does.
    assert results_elsewhere(settings) != before
    report = c.reindex.rebuild()
    assert report.entries == len(rows_before) and report.unreadable == 0
    assert index_rows(c) == rows_before
    assert results(c) == before


def test_lethe_reindex_on_a_store_whose_index_was_dropped_gives_identical_search_results(
    lethe, settings, monkeypatch
):
    c = lethe
    populate(c)
    before, rows_before = results(c), index_rows(c)
    drop_index(c)
    assert results_elsewhere(settings) != before
    _cli_env(settings, monkeypatch)
    result = CliRunner().invoke(cli, ["reindex", "--json"])
    assert result.exit_code == 0, result.output
    assert f'"entries": {len(rows_before)}' in result.stdout
    assert index_rows(c) == rows_before and results(c) == before
    assert CliRunner().invoke(cli, ["replay", "--check"]).exit_code == 0


def test_reindex_records_its_recipe_in_the_store(lethe):
    c = lethe
    assert c.reindex.recipe() == CURRENT_RECIPE  # a new store records the recipe it is built with
    c.memories.write(agent(), write_cmd("alice likes tea"))
    report = c.reindex.rebuild()
    with c.uow.read() as conn:
        row = conn.execute(sa.select(index_recipes).where(index_recipes.c.name == SEARCH_INDEX)).one()
    assert (row.tokeniser, row.tokeniser_version) == (
        CURRENT_RECIPE.tokeniser,
        CURRENT_RECIPE.tokeniser_version,
    )
    assert (row.term_hash, row.term_hash_version) == (
        CURRENT_RECIPE.term_hash,
        CURRENT_RECIPE.term_hash_version,
    )
    assert row.entries == 1 and row.built_at == report.built_at


def test_replay_check_agrees_with_its_index_rebuild_after_every_kind_of_removal(lethe):
    c = lethe
    populate(c)
    report = replay.check(c.uow.engine, index=c.reindex.check())
    assert report.identical, report.differences


def test_replay_check_reports_a_stale_or_missing_index_entry_and_a_stale_recipe(lethe):
    c = lethe
    kept = c.memories.write(agent(), write_cmd("alice likes tea")).item
    gone = c.memories.write(agent(), write_cmd("alice likes coffee")).item
    c.retractions.retract(reviewer(), memory_id=gone.id, reason="wrong")
    with c.uow.maintenance("test: alter rows as their owner"), c.uow.write() as conn:
        conn.execute(search_index.delete().where(search_index.c.memory_id == kept.id))
        conn.execute(
            search_index.insert().values(memory_id=gone.id, tenant_id="t1", subject_ref="x", terms="ab")
        )
        conn.execute(index_recipes.update().values(term_hash_version=0))
    differences = replay.check(c.uow.engine, index=c.reindex.check()).differences
    assert any(f"'{kept.id}'" in d and "only in the rebuilt index" in d for d in differences)
    assert any(f"'{gone.id}'" in d and "only in the live index" in d for d in differences)
    assert any("recipe" in d for d in differences)
    c.reindex.rebuild()
    assert replay.check(c.uow.engine, index=c.reindex.check()).identical


def _cli_env(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)


def test_lethe_reindex_runs_beside_a_server_and_refuses_during_a_restore(lethe, settings, monkeypatch):
    c = lethe
    c.memories.write(agent(), write_cmd("alice likes tea"))
    _cli_env(settings, monkeypatch)
    runner = CliRunner()
    server = serve_lease(settings.data_dir, c.uow.engine)  # a running `lethe serve` holds this
    try:
        result = runner.invoke(cli, ["reindex", "--json"])
        assert result.exit_code == 0, result.output
        assert '"entries": 1' in result.stdout
        checked = runner.invoke(cli, ["replay", "--check"])
        assert checked.exit_code == 0, checked.output
    finally:
        server.release()
    with exclusive_lease(settings.data_dir, c.uow.engine, "a restore"):
        refused = runner.invoke(cli, ["reindex"])
    assert refused.exit_code == 1
    assert "restore or migration" in refused.stderr


def test_lethe_replay_check_fails_on_a_stale_index(lethe, settings, monkeypatch):
    c = lethe
    gone = c.memories.write(agent(), write_cmd("alice likes coffee")).item
    c.retractions.retract(reviewer(), memory_id=gone.id, reason="wrong")
    with c.uow.maintenance("test: alter rows as their owner"), c.uow.write() as conn:
        conn.execute(
            search_index.insert().values(memory_id=gone.id, tenant_id="t1", subject_ref="x", terms="ab")
        )
    _cli_env(settings, monkeypatch)
    runner = CliRunner()
    result = runner.invoke(cli, ["replay", "--check"])
    assert result.exit_code == 1 and "search_index" in result.stdout
    assert runner.invoke(cli, ["reindex"]).exit_code == 0
    assert runner.invoke(cli, ["replay", "--check"]).exit_code == 0


@pytest.mark.parametrize("status", ["superseded", "expired"])
def test_a_memory_that_cannot_come_back_leaves_the_index(lethe, status):
    c = lethe
    old = c.memories.write(agent(), write_cmd("alice likes tea", ttl_seconds=60)).item
    if status == "superseded":
        c.memories.write(agent(), write_cmd("alice likes green tea", supersedes_id=old.id))
    else:
        later = utcnow() + timedelta(hours=1)
        c.memories.clock = lambda: later
        c.memories.sweep_expired()
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        left = conn.execute(sa.select(search_index).where(search_index.c.memory_id == old.id)).all()
    assert left == []


def test_reindex_beside_concurrent_writers_loses_no_index_entry(lethe):
    c = lethe
    populate(c)
    written: list[str] = []
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(15):
                cmd = write_cmd(f"concurrent tea {n} {i}", subject=f"w{n}")
                written.append(c.memories.write(agent(agent_id=f"w{n}"), cmd).item.id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    rebuilds = 0
    while any(t.is_alive() for t in threads) or rebuilds < 2:
        c.reindex.rebuild()
        rebuilds += 1
    for t in threads:
        t.join()
    assert errors == [] and len(written) == 45
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        indexed = {r.memory_id for r in conn.execute(sa.select(search_index.c.memory_id))}
    assert set(written) <= indexed
    assert replay.check(c.uow.engine, index=c.reindex.check()).identical
