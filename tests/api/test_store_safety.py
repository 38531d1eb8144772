"""The CLI and the server open only the store they were pointed at, at the schema they know.

A command run from the wrong folder must not quietly start a new store with new keys,
a server must not run on a schema another release wrote, and every file Lethe creates
is private to its owner.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import build, initialise
from lethe.api.settings import Settings
from lethe.vault import errors
from lethe.vault.erasure.backup import create_backup
from lethe.vault.store.db import make_engine
from lethe.vault.store.schema import downgrade, upgrade
from tests.api.test_serve import lethe_command, start_server
from tests.children import lethe_env, python_on_a_new_store
from tests.conftest import agent, officer, write_cmd

PUBLIC_FILES = {"signing.pub.pem", "log-origin"}  # the public key and origin auditors pin


def run_lethe(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lethe_command(), *args],
        env=lethe_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [("erasure", "list", "--tenant", "t1"), ("compact",), ("token", "list", "--tenant", "t1"), ("serve",)],
)
def test_commands_refuse_a_missing_data_dir_and_create_nothing(tmp_path: Path, args: tuple[str, ...]) -> None:
    missing = tmp_path / "elsewhere" / "lethe-data"
    r = run_lethe(missing, *args)
    assert r.returncode == 2, r.stdout + r.stderr
    message = " ".join(r.stderr.split())
    assert str(missing) in message and "LETHE_DATA_DIR" in message and "lethe init" in message
    assert not missing.exists() and not (tmp_path / "elsewhere").exists()


def test_init_creates_the_store_then_commands_open_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_lethe(data, "init").returncode == 0
    r = run_lethe(data, "erasure", "list", "--tenant", "t1", "--json")
    assert r.returncode == 0, r.stderr
    assert run_lethe(data, "init").stdout.strip().startswith("already initialised")


def test_a_store_missing_its_pepper_is_refused_rather_than_given_a_new_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    c = build(Settings(data_dir=data), create=True)
    c.memories.write(agent(), write_cmd("kept under the old pepper"))
    c.close()
    (data / "keys" / "pepper.key").unlink()
    for args in (("erasure", "list", "--tenant", "t1"), ("init",)):
        r = run_lethe(data, *args)
        assert r.returncode == 2 and "pepper.key" in r.stderr, r.stderr
    assert not (data / "keys" / "pepper.key").exists()


def test_serve_refuses_an_older_schema_and_names_the_migration(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    initialise(settings)
    engine = make_engine(settings.db_url)
    upgrade(engine, "0001")  # a store written by the first release
    engine.dispose()
    r = run_lethe(settings.data_dir, "serve", "--port", "1")
    assert r.returncode == 2 and "lethe migrate" in r.stderr and "0001" in r.stderr, r.stderr
    migrated = run_lethe(settings.data_dir, "migrate")
    assert migrated.returncode == 0 and "upgraded from 0001" in migrated.stdout, migrated.stderr
    assert run_lethe(settings.data_dir, "erasure", "list", "--tenant", "t1").returncode == 0


def test_serve_refuses_a_schema_from_a_newer_release(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    build(settings, create=True).close()
    engine = make_engine(settings.db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999_future'"))
    engine.dispose()
    r = run_lethe(settings.data_dir, "serve", "--port", "1")
    assert r.returncode == 2 and "newer Lethe" in " ".join(r.stderr.split()), r.stderr
    assert run_lethe(settings.data_dir, "migrate").returncode == 2


_OPEN_AND_PROBE = """
import json, sys
from lethe.api.bootstrap import build
from lethe.api.settings import Settings
from lethe.vault.store.readiness import check_readiness
c = build(Settings())
checks = check_readiness(c.uow, c.kms)
c.close()
print(json.dumps([[m for m in ("alembic", "mako", "pygments") if m in sys.modules], len(checks)]))
"""


def test_a_process_that_opens_a_current_store_and_probes_it_never_imports_alembic(tmp_path: Path) -> None:
    # Alembic and what it pulls in are 11 MiB of a server process's memory: a store at this
    # release's schema is recognised without them (schema.HEAD); only migrating needs them.
    imported, checks = python_on_a_new_store(tmp_path / "data", _OPEN_AND_PROBE)
    assert imported == [] and checks > 0


@pytest.mark.slow
def test_a_bootstrap_tenant_set_after_the_first_start_is_warned_about(tmp_path: Path) -> None:
    first = start_server(tmp_path, {})
    first.stop()
    second = start_server(tmp_path, {"LETHE_BOOTSTRAP_TENANT": "acme"})
    second.stop()
    log = " ".join(second.err.read_text().split())
    assert "LETHE_BOOTSTRAP_TENANT=acme is ignored" in log
    assert "lethe token create --tenant acme --role admin" in log


def test_every_file_lethe_creates_is_private_to_the_owner(tmp_path: Path) -> None:
    previous = os.umask(0o022)  # a permissive umask: privacy must not depend on it
    try:
        settings = Settings(data_dir=tmp_path / "data")
        c = build(settings, create=True)
        c.memories.write(agent(), write_cmd("a private memory", subject="perm@example.com"))
        c.erasure.request(officer(), "perm@example.com", "gdpr-art17-1a", None)
        c.erasure.run_pending()
        create_backup(c.uow, settings.data_dir / "backups", log=c.log)
        files = [p for p in settings.data_dir.rglob("*") if p.is_file()]
        assert any(p.name.endswith("-wal") for p in files)  # the WAL exists while connections are open
        c.close()
    finally:
        os.umask(previous)
    loose = {
        str(p.relative_to(settings.data_dir)): oct(stat.S_IMODE(p.stat().st_mode))
        for p in files
        if p.exists() and p.name not in PUBLIC_FILES and stat.S_IMODE(p.stat().st_mode) & 0o077
    }
    assert loose == {}
    dirs = [p for p in settings.data_dir.rglob("*") if p.is_dir()] + [settings.data_dir]
    assert all(stat.S_IMODE(d.stat().st_mode) & 0o077 == 0 for d in dirs)


@pytest.mark.slow
def test_a_restore_is_refused_while_a_server_uses_the_store(tmp_path: Path) -> None:
    server = start_server(tmp_path, {})
    try:
        made = run_lethe(tmp_path / "data", "backup", "create")  # safe beside the server
        assert made.returncode == 0, made.stderr
        manifest = made.stdout.split("backup written:")[1].strip()
        refused = run_lethe(tmp_path / "data", "backup", "restore", manifest)
        assert refused.returncode != 0
        assert "stop every `lethe serve`" in " ".join(refused.stderr.split())
    finally:
        server.stop()
    restored = run_lethe(tmp_path / "data", "backup", "restore", manifest)
    assert restored.returncode == 0, restored.stderr


def test_migrate_folds_subject_ids_written_before_0028(tmp_path: Path, monkeypatch) -> None:
    """`lethe migrate` re-derives the refs of ids holding invisible characters (0028): forgetting
    "alice-x" then reaches a memory an earlier release wrote for "alice\u200b-x"."""
    settings = Settings(data_dir=tmp_path / "data")
    c = build(settings, create=True)
    with monkeypatch.context() as m:  # written as the release before 0028 did: NFC only
        m.setattr("lethe.vault.memory.service.normal_subject_id", lambda s: s)
        old = c.memories.write(agent(), write_cmd("old memory", subject="alice\u200b-x")).item
    kept = c.memories.write(agent(), write_cmd("someone else", subject="alice-y")).item
    c.close()
    engine = make_engine(settings.db_url)
    downgrade(engine, "0027")
    engine.dispose()
    migrated = run_lethe(settings.data_dir, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert "upgraded from 0027" in migrated.stdout and "re-derived: 1 " in migrated.stdout
    again = run_lethe(settings.data_dir, "migrate")
    assert again.returncode == 0 and "re-derived: 0 " in again.stdout, again.stderr
    c = build(settings)
    try:
        c.erasure.request(officer(), "alice-x", "gdpr-art17-1a", None)
        c.erasure.run_pending()
        with pytest.raises(errors.NotFound):
            c.memories.get(agent(), old.id)
        assert c.memories.get(agent(), kept.id).id == kept.id
    finally:
        c.close()
