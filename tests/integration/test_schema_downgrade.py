"""``schema.downgrade`` takes a store back to an earlier release's revision and ``upgrade``
brings it forward (``lethe bench --previous`` runs an earlier release's server on today's store)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from lethe.vault.store.db import make_engine
from lethe.vault.store.schema import downgrade, schema_state, upgrade


def _scope_index_columns(engine: sa.Engine) -> list[str]:
    index = next(i for i in sa.inspect(engine).get_indexes("memories") if i["name"] == "ix_memories_scope")
    return list(index["column_names"])


def test_a_store_goes_back_to_0015_and_forward_to_the_head(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 's.sqlite3'}")
    upgrade(engine)
    head = schema_state(engine).current
    assert "kind" in _scope_index_columns(engine)  # 0016: the scope index covers the ranked columns
    downgrade(engine, "0015")
    assert schema_state(engine).current == "0015"
    assert _scope_index_columns(engine) == ["tenant_id", "agent_id", "purpose", "status", "expires_at"]
    upgrade(engine)
    assert schema_state(engine).current == head and "kind" in _scope_index_columns(engine)
    engine.dispose()
