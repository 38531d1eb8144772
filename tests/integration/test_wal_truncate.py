"""Compaction empties SQLite's WAL even while another process checkpoints, and says when it
could not.

Another process's checkpoint (SQLite runs one after a commit once the WAL is long) holds the
checkpoint lock, and SQLite answers a second checkpoint busy at once, copying nothing. Under a
second process's writes that happened to about one TRUNCATE checkpoint in ten. The helper
process here holds that lock (byte 121 of the ``-shm`` file, SQLite's ``WAL_CKPT_LOCK``) as such
a checkpoint would: it opens no SQLite connection, and the test process never touches the
files with plain file I/O.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lethe.vault.erasure import compaction_disk
from lethe.vault.erasure.compaction_disk import reclaim_space
from tests.conftest import agent, logical_forget, write_cmd

ALICE = "alice@example.com"
CKPT_LOCK_BYTE = 120 + 1  # the shm lock area starts at byte 120; the checkpoint lock is its second

_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]))
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
    """
)


@contextmanager
def checkpoint_lock_held(database: Path, seconds: float) -> Iterator[None]:
    """Another process holding SQLite's checkpoint lock from now for ``seconds`` (at most until
    the block ends), as its own checkpoint would."""
    args = [sys.executable, "-c", _HOLDER, f"{database}-shm", str(CKPT_LOCK_BYTE), str(seconds)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield
    finally:
        proc.kill()
        proc.wait(timeout=10)


def notes_written(c, n: int) -> Path:  # type: ignore[no-untyped-def]
    """``n`` memories of Alice written (their pages in the WAL); the database file."""
    for i in range(n):
        c.memories.write(agent(), write_cmd(f"note {i}", subject=ALICE))
    return Path(c.uow.engine.url.database)


def wal_bytes(database: Path) -> int:
    return Path(f"{database}-wal").stat().st_size


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_reclaim_waits_out_another_process_checkpoint_and_empties_the_wal(lethe):
    c = lethe
    database = notes_written(c, 5)
    assert wal_bytes(database) > 0
    with checkpoint_lock_held(database, 0.5):
        result = reclaim_space(c.uow.engine, vacuum=False)
    assert result["wal_truncated"] is True
    assert wal_bytes(database) == 0


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_reclaim_says_the_wal_was_not_emptied_when_the_lock_never_came_free(lethe, monkeypatch):
    c = lethe
    database = notes_written(c, 5)
    monkeypatch.setattr(compaction_disk, "WAL_TRUNCATE_WAIT_S", 0.3)
    with checkpoint_lock_held(database, 30):
        result = reclaim_space(c.uow.engine, vacuum=False)
        still = wal_bytes(database)
    assert result["wal_truncated"] is False
    assert still > 0  # what it says is what the files show
    assert reclaim_space(c.uow.engine, vacuum=False)["wal_truncated"] is True  # once the lock is free
    assert wal_bytes(database) == 0


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_lethe_compact_says_when_the_wal_was_not_emptied(lethe, monkeypatch):
    from typer.testing import CliRunner

    from lethe.api.cli import app as cli

    c = lethe
    database = notes_written(c, 3)
    logical_forget(c, ALICE)
    monkeypatch.setenv("LETHE_DATA_DIR", str(c.settings.data_dir))
    monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    monkeypatch.setattr(compaction_disk, "WAL_TRUNCATE_WAIT_S", 0.3)
    with checkpoint_lock_held(database, 30):
        held = CliRunner().invoke(cli, ["compact"])
    assert held.exit_code == 0, held.output
    assert "rewrote 3 events" in held.output and "the WAL was not emptied" in held.output
    assert wal_bytes(database) > 0
    again = CliRunner().invoke(cli, ["compact"])  # nothing left to rewrite: it still empties the WAL
    assert again.exit_code == 0 and "not emptied" not in again.output
    assert wal_bytes(database) == 0


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_scheduled_compaction_logs_a_wal_it_could_not_empty_and_empties_it_on_its_next_run(
    lethe, monkeypatch, caplog
):
    from lethe.api.http.background import scheduled_compaction

    c = lethe
    database = notes_written(c, 3)
    logical_forget(c, ALICE)
    monkeypatch.setattr(compaction_disk, "WAL_TRUNCATE_WAIT_S", 0.3)
    with caplog.at_level(logging.WARNING, logger="lethe.api"), checkpoint_lock_held(database, 30):
        assert scheduled_compaction(c) == 3
        still = wal_bytes(database)
    assert still > 0
    logged = [r.getMessage() for r in caplog.records]
    assert logged == ["compaction did not empty the WAL; the next run retries"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lethe.api"):
        assert scheduled_compaction(c) == 0  # nothing to rewrite, but the WAL it left
    assert wal_bytes(database) == 0
    assert not caplog.records
