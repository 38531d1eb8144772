"""A page of an agent's own memories is one backward range of ``ix_memories_owner``
(migration 0022), on SQLite and PostgreSQL: no sort of the agent's whole history, so a page
costs its own rows however many the agent holds (``vault/memory/own_records.py``)."""

from __future__ import annotations

from lethe.api.bootstrap import Container
from lethe.vault.clock import utcnow
from lethe.vault.memory.own_records import OwnQuery, page_statement
from tests.conftest import agent, write_cmd


def plan_of(lethe: Container, before_seq: int | None) -> str:
    statement = page_statement(agent(), utcnow(), 51, before_seq=before_seq)
    with lethe.uow.engine.connect() as conn:
        sql = str(statement.compile(conn, compile_kwargs={"literal_binds": True}))
        if conn.dialect.name == "sqlite":
            return "\n".join(r[-1] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))
        conn.exec_driver_sql("ANALYZE memories")
        # A table this small is read whole by choice; what matters is the order the index gives.
        conn.exec_driver_sql("SET enable_seqscan = off")
        conn.exec_driver_sql("SET enable_sort = off")
        return "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql))


def test_a_page_is_one_range_of_the_owner_index(lethe: Container) -> None:
    for i in range(30):
        lethe.memories.write(agent(), write_cmd(f"note {i}", subject=f"s{i % 3}"))
        lethe.memories.write(agent(agent_id="a2"), write_cmd(f"other {i}"))
    page = lethe.own_records.page(agent(), OwnQuery(limit=10))
    assert [i.content for i in page.items] == [f"note {i}" for i in range(29, 19, -1)]
    for before in (None, 10**6):
        plan = plan_of(lethe, before)
        assert "ix_memories_owner" in plan, plan
        assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
