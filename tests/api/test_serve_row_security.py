"""A real ``lethe serve`` on PostgreSQL with its default settings stands behind the tenant
wall: its transactions run as the application role with Row-Level Security active, which
its readiness checks in the server process itself; taking the wall down from outside makes
the running server unready. The control: ``LETHE_ROW_SECURITY=false`` (the documented
opt-out) takes the server from behind it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from tests.api.test_serve import memory, start_server

pytestmark = pytest.mark.slow


def test_a_running_server_stands_behind_the_wall(tmp_path: Path, postgres) -> None:  # type: ignore[no-untyped-def]
    url = postgres.create()
    server = start_server(tmp_path, {"LETHE_DATABASE_URL": url})  # no LETHE_ROW_SECURITY: the default
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


def test_the_opt_out_takes_a_running_server_from_behind_the_wall(tmp_path: Path, postgres) -> None:  # type: ignore[no-untyped-def]
    """``LETHE_ROW_SECURITY=false``: the server's transactions run as the tables' owner. The
    application role losing its right to read memories changes nothing for it (it does not
    run as that role), readiness has no wall to check, and the application's own tenant
    check still keeps t2's memory out of t1's search."""
    url = postgres.create()
    server = start_server(tmp_path, {"LETHE_DATABASE_URL": url, "LETHE_ROW_SECURITY": "false"})
    owner = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        one = server.mint("--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
        two = server.mint("--tenant", "t2", "--role", "agent", "--agent", "a1", "--purpose", "support")
        with owner.connect() as conn:  # a server running as lethe_app could no longer read memories
            conn.execute(sa.text("REVOKE SELECT ON memories FROM lethe_app"))
        with httpx.Client(base_url=server.url, timeout=30) as http:
            ready = http.get("/readyz")
            assert ready.status_code == 200 and "tenant wall" not in ready.json()["checks"]
            for token, content in ((one, "Alice likes green tea"), (two, "Bob likes green tea")):
                headers = {"Authorization": f"Bearer {token['token']}"}
                assert http.post("/v1/memories", json=memory(content), headers=headers).status_code == 201
            headers = {"Authorization": f"Bearer {one['token']}"}
            found = http.post(
                "/v1/memories/search", json={"query": "tea", "purpose": "support"}, headers=headers
            )
            assert found.status_code == 200
            assert [i["content"] for i in found.json()["items"]] == ["Alice likes green tea"]
    finally:
        server.stop()
        owner.dispose()
        postgres.drop(url)
