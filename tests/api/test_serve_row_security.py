"""A real ``lethe serve`` on PostgreSQL with the tenant wall on (``LETHE_ROW_SECURITY``):
its transactions run as the application role with Row-Level Security active, which its
readiness checks in the server process itself; taking the wall down from outside makes the
running server unready."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from tests.api.test_serve import memory, start_server

pytestmark = pytest.mark.slow


def test_a_running_server_stands_behind_the_wall(tmp_path: Path, postgres) -> None:  # type: ignore[no-untyped-def]
    url = postgres.create()
    server = start_server(tmp_path, {"LETHE_DATABASE_URL": url, "LETHE_ROW_SECURITY": "true"})
    owner = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        one = server.mint("--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
        two = server.mint("--tenant", "t2", "--role", "agent", "--agent", "a1", "--purpose", "support")
        with httpx.Client(base_url=server.url, timeout=30) as http:
            ready = http.get("/readyz")
            assert ready.status_code == 200 and ready.json()["checks"]["tenant wall"] == "ok"
            for token, content in ((one, "Alice likes green tea"), (two, "Bob likes green tea")):
                headers = {"Authorization": f"Bearer {token['token']}"}
                assert http.post("/v1/memories", json=memory(content), headers=headers).status_code == 201
            headers = {"Authorization": f"Bearer {one['token']}"}
            found = http.post(
                "/v1/memories/search", json={"query": "tea", "purpose": "support"}, headers=headers
            )
            assert [i["content"] for i in found.json()["items"]] == ["Alice likes green tea"]
            with owner.connect() as conn:  # both tenants' rows are there, for the tables' owner
                assert (
                    conn.execute(sa.text("SELECT count(DISTINCT tenant_id) FROM memories")).scalar_one() == 2
                )
                conn.execute(sa.text("ALTER TABLE memories DISABLE ROW LEVEL SECURITY"))
            down = http.get("/readyz")
            assert down.status_code == 503 and "tenant wall failed (WallDown)" in down.json()["detail"]
            with owner.connect() as conn:
                conn.execute(sa.text("ALTER TABLE memories ENABLE ROW LEVEL SECURITY"))
            assert http.get("/readyz").status_code == 200
    finally:
        server.stop()
        owner.dispose()
        postgres.drop(url)
