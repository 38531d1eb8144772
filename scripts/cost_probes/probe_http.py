"""Probe: N HTTP requests of one kind through the ASGI app (FastAPI's TestClient).

``search``: a scoped search (as ``lethe bench``'s figure 6); ``auth``: a GET of a missing
memory, figure 6's "auth only" baseline. Both runs of a pair make the same 300 writes and
warm both paths first, so the difference of N=0 and N counts only the N requests; the
server's timed jobs are off (a memory without a vector is filled every 2 s whatever the
settings, a few hundred instructions when none is missing).
"""

from __future__ import annotations

import random
import sys
import tempfile
import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from lethe.api.bench.workload import query_words
from lethe.api.bootstrap import build
from lethe.api.settings import Settings
from lethe.vault.model import Role

try:  # the app module's home since the package floors; before them, api/http
    from lethe.api.server.app import create_app
except ImportError:
    from lethe.api.http.app import create_app  # type: ignore[no-redef]

kind, n = sys.argv[1], int(sys.argv[2])


def search(client: TestClient, h: dict[str, str], rng: random.Random) -> None:
    body = {"query": query_words(rng), "purpose": "support", "limit": 10, "token_budget": 2000}
    r = client.post("/v1/memories/search", json=body, headers=h)
    assert r.status_code == 200, r.status_code


def auth(client: TestClient, h: dict[str, str], rng: random.Random) -> None:
    r = client.get(f"/v1/memories/{uuid.UUID(int=rng.getrandbits(128))}", headers=h)
    assert r.status_code == 404, r.status_code


with tempfile.TemporaryDirectory() as d:
    # The server's periodic jobs off: under callgrind a second of wall time is a hundred times
    # longer, so a job on a timer would count in proportion to the run's length, not its work.
    quiet = {f"{job}_interval_seconds": 1e9 for job in ("sweep", "erasure", "compaction", "checkpoint")}
    if "webhook_interval_seconds" in Settings.model_fields:
        quiet["webhook_interval_seconds"] = 1e9
    settings = Settings(data_dir=Path(d), kms="local", malloc_trim_interval_seconds=0, **quiet)
    build(settings, create=True).close()
    app = create_app(settings)
    with TestClient(app) as client:
        token, _ = app.state.tokens.create(Role.AGENT, "t1", "a1", ("support",), None)
        h = {"Authorization": f"Bearer {token}"}
        rng = random.Random(5)
        for i in range(300):
            body = {
                "subject_id": f"s{i % 4}",
                "purpose": "support",
                "kind": "fact",
                "content": f"{query_words(rng)} {query_words(rng)}",
                "provenance": {"source_type": "user_statement", "source_ref": "bench/http"},
                "confidence": 0.5,
                "idempotency_key": uuid.uuid4().hex,
            }
            assert client.post("/v1/memories", json=body, headers=h).status_code == 201
        for _ in range(5):
            search(client, h, rng)
            auth(client, h, rng)
        for _ in range(n):
            (search if kind == "search" else auth)(client, h, rng)
