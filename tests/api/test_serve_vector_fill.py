"""A server started on a store whose memories were written without vectors (here by a
process configured lexical, as an agent's ``lethe mcp`` without the semantic extra would
write them) embeds them in the background from its start: progress in its log, the count
in ``/readyz``, and searches ``hybrid`` once the vectors are all there."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from lethe.api.bootstrap import build
from lethe.api.settings import Settings
from tests.api.test_serve import start_server
from tests.conftest import agent, write_cmd

pytestmark = pytest.mark.slow

TEA = "Alice prefers green tea in the morning"


def test_a_server_fills_in_missing_vectors_from_its_start(tmp_path: Path) -> None:
    lexical = build(Settings(data_dir=tmp_path / "data", embedding_model="none"), create=True)
    try:
        for text in (TEA, "Alice works as a nurse", "Alice plays the violin"):
            lexical.memories.write(agent(), write_cmd(text))
    finally:
        lexical.close()
    srv = start_server(tmp_path, {}, workers=1)
    try:
        minted = srv.mint("--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
        token = minted["token"]
        deadline = time.monotonic() + 120
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            while (left := http.get("/readyz").json()["checks"]["memories without a vector"]) != "0":
                assert time.monotonic() < deadline, f"still {left} without a vector"
                time.sleep(0.5)
            found = http.post(
                "/v1/memories/search",
                json={"query": "what does she like to drink", "purpose": "support", "limit": 1},
                headers={"Authorization": f"Bearer {token}"},
            ).json()
        assert found["recall"] == "hybrid" and found["items"][0]["content"] == TEA
    finally:
        srv.stop()
    progress = [json.loads(line) for line in srv.lines() if "memories given a vector" in line]
    assert progress and progress[-1]["remaining"] == 0 and sum(p["count"] for p in progress) == 3
