"""Issue 10: CLI commands beside a running ``lethe serve`` on the same SQLite data dir.

Operators run ``lethe erasure list``, ``lethe forget``, ``lethe audit checkpoint`` and
``lethe compact`` on the server's host while it serves. Doing so once corrupted the store
(500s, "database disk image is malformed"), lost acknowledged writes and brought a
forgotten subject's key back into the local keystore. The scenario runs here against
real processes; every claim is checked after the server stopped and again after a
restart, and the test process never opens a live SQLite file itself (see ``stack``).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from tests.torture.stack import (
    AGENT,
    FORGET_ACCEPTED,
    Claims,
    HttpLog,
    acknowledged_id,
    cli,
    forget_args,
    integrity_problems,
    keys_of,
    keystore_key_names,
    request_erasure,
    serve,
    subject_keys_by_memory,
    wait_until_reported,
    write,
)

pytestmark = pytest.mark.slow

TENANT = "acme"
WRITES_PER_SUBJECT = 3


def test_cli_beside_a_running_server_loses_no_write_and_undoes_no_erasure(tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    s1, s2, s3, s4, s5 = (f"s{i}-{run}@example.com" for i in range(1, 6))  # s5: first seen mid-run
    s2_reference = f"DSR-cli-{run}"
    data = tmp_path / "data"
    claims, log = Claims(), HttpLog()
    # subject -> (memory id, content) of every write the server acknowledged
    written: dict[str, list[tuple[str, str]]] = {s: [] for s in (s1, s2, s3, s4, s5)}

    def remember(agent: httpx.Client, subject: str) -> None:
        content = f"{subject} note {len(written[subject])} {uuid.uuid4().hex}"
        r = write(agent, subject, content)
        memory_id = acknowledged_id(r)
        if claims.check(memory_id is not None, f"a write for {subject} is acknowledged", r.text):
            written[subject].append((memory_id, content))

    def beside_the_server(env: dict[str, str], *args: str) -> None:
        claims.cli(cli(env, *args), FORGET_ACCEPTED if args[0] == "forget" else (0,))

    server = serve(tmp_path / "first-run", data)
    try:
        agent_token = server.mint("--tenant", TENANT, *AGENT)
        officer_token = server.mint("--tenant", TENANT, "--role", "privacy_officer")
        doomed_token = server.mint("--tenant", TENANT, *AGENT)
        with (
            log.client(server.url, agent_token["token"]) as agent,
            log.client(server.url, officer_token["token"]) as officer,
            log.client(server.url, doomed_token["token"]) as doomed,
        ):
            for subject in (s1, s2, s3, s4):
                for _ in range(WRITES_PER_SUBJECT):
                    remember(agent, subject)
            assert doomed.get(f"/v1/memories/{written[s3][0][0]}").status_code == 200

            s1_job = request_erasure(officer, s1)
            job = wait_until_reported(officer, s1_job)
            claims.check(job["status"] == "reported", "s1's erasure over HTTP is reported", job)

            # The operator's commands, beside the running server, between agents' writes.
            beside_the_server(server.env, "erasure", "list", "--tenant", TENANT)
            remember(agent, s3)
            beside_the_server(server.env, *forget_args(TENANT, s2, s2_reference))
            remember(agent, s4)
            remember(agent, s5)  # a new subject: the server creates its key beside the CLI
            r = officer.get("/v1/erasure-requests")
            claims.check(r.status_code == 200, "the erasure requests list while CLI commands run", r.text)
            beside_the_server(server.env, "audit", "checkpoint")
            remember(agent, s3)
            beside_the_server(server.env, "compact")
            remember(agent, s4)
            remember(agent, s5)
            beside_the_server(server.env, "token", "revoke", doomed_token["id"])
            r = doomed.get(f"/v1/memories/{written[s3][0][0]}")
            claims.check(r.status_code == 401, "a token revoked by the CLI is refused at once", r.status_code)

            listing = officer.get("/v1/erasure-requests")
            claims.check(listing.status_code == 200, "GET /v1/erasure-requests answers 200", listing.text)
            jobs = listing.json().get("items", []) if listing.status_code == 200 else []
            s2_jobs = [j["id"] for j in jobs if j.get("reference") == s2_reference]
            claims.check(
                s1_job in {j["id"] for j in jobs} and len(s2_jobs) == 1,
                "the list holds the HTTP and the CLI erasure requests",
                jobs,
            )
            for job_id in s2_jobs:  # `lethe forget` may have left the rest to the server's runner
                job = wait_until_reported(officer, job_id)
                claims.check(job["status"] == "reported", "s2's erasure by the CLI is reported", job)
    finally:
        server.stop()

    problems = integrity_problems(data)
    claims.check(not problems, "PRAGMA integrity_check is ok for every SQLite file", problems)
    held, keys_by_memory = keystore_key_names(data), subject_keys_by_memory(server.env)
    for subject in (s1, s2):
        keys = keys_of(keys_by_memory, (memory_id for memory_id, _ in written[subject]))
        claims.check(bool(keys), f"the data DB records {subject}'s key generations", keys)
        claims.check(
            set(keys.values()) <= {"destroyed"}, f"the data DB records {subject}'s keys as destroyed", keys
        )
        claims.check(not held & keys.keys(), f"{subject}'s key is gone from the keystore", held & keys.keys())

    server = serve(tmp_path / "second-run", data)
    try:
        with (
            log.client(server.url, agent_token["token"]) as agent,
            log.client(server.url, doomed_token["token"]) as doomed,
        ):
            for subject in (s3, s4, s5):
                for memory_id, content in written[subject]:
                    r = agent.get(f"/v1/memories/{memory_id}")
                    claims.check(
                        r.status_code == 200 and r.json()["content"] == content,
                        f"an acknowledged write of {subject} reads back after a restart",
                        f"{memory_id}: {r.status_code} {r.text[:200]}",
                    )
            for subject in (s1, s2):
                for memory_id, _ in written[subject]:
                    r = agent.get(f"/v1/memories/{memory_id}")
                    claims.check(
                        r.status_code == 404,
                        f"a memory of forgotten {subject} stays unreadable after a restart",
                        f"{memory_id}: {r.status_code} {r.text[:200]}",
                    )
            r = doomed.get(f"/v1/memories/{written[s3][0][0]}")
            claims.check(r.status_code == 401, "a revoked token stays refused after a restart", r.status_code)
        claims.cli(cli(server.env, "audit", "verify"))
        claims.cli(cli(server.env, "replay", "--check"))
    finally:
        server.stop()

    claims.check(not log.server_errors(), "no HTTP response in the run was a 5xx", log.server_errors())
    claims.assert_all_hold()
