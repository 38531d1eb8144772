"""The hot reads (get one memory, a search's results) read each memory's key row in the
statement that reads the memory (``repository.by_ids_with_keys``): a round trip fewer on
PostgreSQL, and the key's state from the same snapshot as the ciphertext. A key destroyed
by another node is honoured even by a process that still caches the data key."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from lethe.vault.custody.keyring import DESTROYED
from lethe.vault.errors import NotFound
from lethe.vault.model import SearchQuery
from lethe.vault.store.tables import subject_keys
from tests.conftest import agent, write_cmd

ALICE, BOB = "alice@example.com", "bob@example.com"


@contextmanager
def statements(engine: sa.Engine) -> Iterator[list[str]]:
    sent: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        if not statement.startswith("BEGIN"):  # SQLite's snapshot; PostgreSQL reads in autocommit
            sent.append(" ".join(statement.split()))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def test_a_get_and_a_search_read_the_key_rows_with_the_memories(lethe) -> None:
    written = lethe.memories.write(agent(), write_cmd("Alice likes green tea", subject=ALICE)).item
    with statements(lethe.uow.tenant_engine) as sent:
        assert lethe.memories.get(agent(), written.id).content == "Alice likes green tea"
    assert len(sent) == 1 and "FROM memories LEFT OUTER JOIN subject_keys" in sent[0]
    query = SearchQuery("green tea", "support")
    lethe.search.search(agent(), query)  # the scope's first search opens its vectors, and keeps them
    with statements(lethe.uow.tenant_engine) as sent:
        found = lethe.search.search(agent(), query)
    assert [i.id for i in found.items] == [written.id]
    key_reads = [s for s in sent if "subject_keys" in s]
    assert len(key_reads) == 1 and "FROM memories LEFT OUTER JOIN subject_keys" in key_reads[0]


def test_a_key_destroyed_elsewhere_hides_an_intact_row_from_a_process_caching_its_data_key(lethe) -> None:
    alice = lethe.memories.write(agent(), write_cmd("Alice likes green tea", subject=ALICE)).item
    bob = lethe.memories.write(agent(), write_cmd("Bob likes green tea too", subject=BOB)).item
    query = SearchQuery("green tea", "support")
    assert {i.id for i in lethe.search.search(agent(), query).items} == {alice.id, bob.id}
    assert lethe.memories.get(agent(), alice.id).content  # alice's data key is cached now

    # Another node destroys the key and has not yet tombstoned her rows: only the key row says so.
    ref = lethe.pseudonyms.subject_ref("t1", ALICE)
    with lethe.uow.acting_for("t1"), lethe.uow.write() as conn:
        changed = conn.execute(
            subject_keys.update()
            .where(subject_keys.c.tenant_id == "t1", subject_keys.c.subject_ref == ref)
            .values(state=DESTROYED)
        )
        assert changed.rowcount == 1

    with pytest.raises(NotFound):
        lethe.memories.get(agent(), alice.id)
    assert [i.id for i in lethe.search.search(agent(), query).items] == [bob.id]
    assert lethe.memories.get(agent(), bob.id).content == "Bob likes green tea too"
