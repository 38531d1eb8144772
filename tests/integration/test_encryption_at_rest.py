"""Content is never stored in clear, and ciphertext is bound to its row."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lethe.keys.filescan import find_in_files
from lethe.vault import errors
from lethe.vault.store.tables import events, memories
from tests.conftest import agent, write_cmd

CANARY = "canary-7f3a9c-the-patient-takes-warfarin"
SUBJECT = "canary-subject-0042@example.com"


def found_in(files, *texts: str) -> set[str]:
    """Which texts are in the files, scanned by a child process (never reading live files here)."""
    hits = find_in_files(files, [t.encode() for t in texts])
    return {texts[i] for found in hits.values() for i in found}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_sqlite_file_contains_no_plaintext_content_or_subject_id(lethe, settings):
    for i in range(5):
        lethe.memories.write(agent(), write_cmd(f"{CANARY} {i}", subject=SUBJECT))
    db = settings.data_dir / "lethe.sqlite3"
    files = sorted(db.parent.glob("lethe.sqlite3*"))  # the WAL is scanned too
    assert db.exists() and sum(p.stat().st_size for p in files) > 0
    assert found_in(files, CANARY, SUBJECT) == set()
    # The scan is able to fail: the canary is found once written in clear.
    with lethe.uow.write() as conn:
        conn.execute(sa.text("CREATE TABLE IF NOT EXISTS scratch (x TEXT)"))
        conn.execute(sa.text("INSERT INTO scratch VALUES (:x)"), {"x": CANARY})
    assert found_in(sorted(db.parent.glob("lethe.sqlite3*")), CANARY) == {CANARY}


def test_ciphertext_copied_onto_another_row_does_not_decrypt(lethe):
    a = lethe.memories.write(agent(), write_cmd("first secret", subject=SUBJECT)).item
    b = lethe.memories.write(agent(), write_cmd("second secret", subject=SUBJECT)).item
    with lethe.uow.maintenance("test: alter rows as their owner"), lethe.uow.write() as conn:
        stolen = conn.execute(sa.select(memories.c.ciphertext).where(memories.c.id == a.id)).scalar_one()
        conn.execute(memories.update().where(memories.c.id == b.id).values(ciphertext=stolen))
    with pytest.raises(errors.NotFound):
        lethe.memories.get(agent(), b.id)
    assert lethe.memories.get(agent(), a.id).content == "first secret"


def test_ciphertext_moved_to_another_tenant_does_not_decrypt(lethe):
    mine = lethe.memories.write(agent("t1"), write_cmd("tenant one secret", subject=SUBJECT)).item
    theirs = lethe.memories.write(agent("t2"), write_cmd("tenant two secret", subject=SUBJECT)).item
    with lethe.uow.maintenance("test: alter rows as their owner"), lethe.uow.write() as conn:
        stolen = conn.execute(sa.select(memories.c.ciphertext).where(memories.c.id == mine.id)).scalar_one()
        conn.execute(memories.update().where(memories.c.id == theirs.id).values(ciphertext=stolen))
    with pytest.raises(errors.NotFound):
        lethe.memories.get(agent("t2"), theirs.id)


def test_events_hold_ciphertext_and_its_digest_never_plaintext(lethe):
    lethe.memories.write(agent(), write_cmd(CANARY, subject=SUBJECT))
    with lethe.uow.read() as conn:
        row = conn.execute(sa.select(events).where(events.c.type == "memory.written")).one()
    assert CANARY not in row.payload and SUBJECT not in row.payload
    assert row.ciphertext and CANARY.encode() not in row.ciphertext
    import hashlib

    assert row.ciphertext_digest == hashlib.sha256(row.ciphertext).hexdigest()
