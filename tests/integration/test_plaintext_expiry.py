"""A node that holds a forgotten subject's plaintext and serves nothing lets go of it on time.

Node B (a `lethe serve`) opens a subject's memories: it caches their data key, their vectors
and, searched again, keeps the scope with the results it opened. Another process (`lethe
forget`, the CLI) forgets the subject; B receives no request after that but `/metrics`
scrapes, which read counts only. Within the data-key TTL and one sweep, B holds none of it:
the bound the certificate states (``keys.key_copies``, ``vault.custody.plaintext_expiry``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from lethe.vault.custody.plaintext_expiry import SWEEP_SECONDS
from lethe.vault.oversight.certificate_wording import OTHER_PROCESSES
from tests.api.test_serve import memory, start_server

pytestmark = pytest.mark.slow

TTL = 3.0
SUBJECT = "alice@example.com"


def held(http: httpx.Client) -> dict[str, float]:
    text = http.get("/metrics").text
    return {k: float(v) for k, v in re.findall(r'lethe_plaintext_held\{kind="(\w+)"\} ([0-9.e+]+)', text)}


def test_an_idle_node_drops_a_forgotten_subjects_plaintext_within_the_ttl_and_a_sweep(tmp_path: Path) -> None:
    # The erasure runner of B waits an hour: the CLI runs the erasure, so B is "another process".
    env = {"LETHE_DEK_CACHE_TTL_SECONDS": str(TTL), "LETHE_ERASURE_INTERVAL_SECONDS": "3600"}
    node = start_server(tmp_path, env)
    try:
        agent = node.mint("--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
        officer = node.mint("--tenant", "t1", "--role", "privacy_officer")
        a = {"Authorization": f"Bearer {agent['token']}"}
        with httpx.Client(base_url=node.url, timeout=30) as http:
            for text in ("Alice likes green tea", "Alice drinks tea daily", "Alice grows tea in pots"):
                assert http.post("/v1/memories", json=memory(text), headers=a).status_code == 201
            for _ in range(3):  # the second and third searches keep the scope and its results
                r = http.post("/v1/memories/search", json={"query": "tea", "purpose": "support"}, headers=a)
                assert len(r.json()["items"]) == 3
            before = held(http)
            assert before["data_keys"] >= 1 and before["vectors"] >= 3 and before["kept_scopes"] >= 1, before

            args = ["forget", "--tenant", "t1", "--subject", SUBJECT, "--basis", "gdpr-art17-1a", "--json"]
            forget = node.cli(*args, timeout=120)
            assert forget.returncode == 0, forget.stderr
            job = json.loads(forget.stdout)
            assert job["status"] == "reported"
            forgotten_at = time.monotonic()

            deadline = forgotten_at + TTL + SWEEP_SECONDS + 10  # 10 s: slack for a loaded machine
            while (now := held(http)) != {"data_keys": 0, "vectors": 0, "kept_scopes": 0}:
                assert time.monotonic() < deadline, now
                time.sleep(0.25)

            # The certificate states that bound for the other processes' plaintext.
            po = {"Authorization": f"Bearer {officer['token']}"}
            got = http.get(f"/v1/erasure-reports/{job['report_id']}", headers=po)
            assert got.status_code == 200
            cert = got.json()
            copies = cert["key_destruction"]["key_copies"]["copies"]
            caches = next(c for c in copies if "DEK caches" in c["copy"])
            assert f"within {TTL + SWEEP_SECONDS:g} s of caching" in caches["fate"]
            held_elsewhere = next(r for r in cert["what_remains"] if r["item"] == OTHER_PROCESSES)
            assert f"freed within {TTL + SWEEP_SECONDS:g} s of caching" in held_elsewhere["why"]
    finally:
        node.stop()
