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

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lethe.vault.erasure import compaction
from lethe.vault.erasure.compaction import reclaim_space
from tests.conftest import agent, write_cmd

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


def hold_checkpoint_lock(database: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding SQLite's checkpoint lock for ``seconds``, as its own checkpoint would."""
    shm = f"{database}-shm"
    args = [sys.executable, "-c", _HOLDER, shm, str(CKPT_LOCK_BYTE), str(seconds)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def wal_bytes(database: Path) -> int:
    return Path(f"{database}-wal").stat().st_size


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_reclaim_waits_out_another_process_checkpoint_and_empties_the_wal(lethe):
    c = lethe
    database = Path(c.uow.engine.url.database)
    for i in range(5):
        c.memories.write(agent(), write_cmd(f"note {i}"))
    assert wal_bytes(database) > 0
    holder = hold_checkpoint_lock(database, 0.5)  # held from before the reclaim starts
    try:
        result = reclaim_space(c.uow.engine, vacuum=False)
    finally:
        holder.wait(timeout=10)
    assert result["wal_truncated"] is True
    assert wal_bytes(database) == 0


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_reclaim_says_the_wal_was_not_emptied_when_the_lock_never_came_free(lethe, monkeypatch):
    c = lethe
    database = Path(c.uow.engine.url.database)
    for i in range(5):
        c.memories.write(agent(), write_cmd(f"note {i}"))
    monkeypatch.setattr(compaction, "WAL_TRUNCATE_WAIT_S", 0.3)
    holder = hold_checkpoint_lock(database, 30)
    try:
        result = reclaim_space(c.uow.engine, vacuum=False)
        still = wal_bytes(database)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert result["wal_truncated"] is False
    assert still > 0  # what it says is what the files show
    assert reclaim_space(c.uow.engine, vacuum=False)["wal_truncated"] is True  # once the lock is free
    assert wal_bytes(database) == 0


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_lethe_compact_says_when_the_wal_was_not_emptied(lethe, monkeypatch):
    from typer.testing import CliRunner

    from lethe.api.cli import app as cli
    from lethe.vault.erasure.forgetting import tombstone_subject

    c = lethe
    database = Path(c.uow.engine.url.database)
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"note {i}", subject="alice@example.com"))
    with c.uow.write() as conn:  # dead ciphertext for the compaction to rewrite
        tombstone_subject(conn, c.log, c.keyring, "t1", c.pseudonyms.subject_ref("t1", "alice@example.com"))
    monkeypatch.setenv("LETHE_DATA_DIR", str(c.settings.data_dir))
    monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    monkeypatch.setattr(compaction, "WAL_TRUNCATE_WAIT_S", 0.3)
    holder = hold_checkpoint_lock(database, 30)
    try:
        held = CliRunner().invoke(cli, ["compact"])
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert held.exit_code == 0, held.output
    assert "rewrote 3 events" in held.output and "the WAL was not emptied" in held.output
    again = CliRunner().invoke(cli, ["compact"])
    assert again.exit_code == 0 and "not emptied" not in again.output
