"""Fault: PostgreSQL restarted (``pg_ctl restart -m fast``) while erasure jobs hold leases.

Two ``lethe serve`` nodes on a private PostgreSQL (``private_postgres``) with OpenBao Transit
as their KMS. OpenBao is stalled (SIGSTOP) before three erasures are filed, so no job can get
past its key destruction, and the test waits until both nodes' runners hold a job's lease
(read from ``erasure_jobs``). Then PostgreSQL is restarted: every session ends, the servers'
advisory locks with them. Then OpenBao resumes, and PostgreSQL is restarted again 0.3 s
later, while the runners record the key destruction and the steps after it (the tally counts
the runner passes a restart cut short). The claims (docs/operations.md, "Several nodes"):

- every job resumes and is ``reported`` once, its lease released;
- no step runs twice: one audit event per step of each job (``erasure.received``, then
  ``erasure.step``), the same steps the API reports, each once;
- each job's certificate verifies offline against the served public key;
- the servers take their store lease again, so a restore from another host is refused;
- clients (an officer polling, an agent searching) never saw a 500 or a hang.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from lethe.api.store_lease import exclusive_lease
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.errors import StoreNotReady
from lethe.vault.store.db import make_engine
from tests.children import clean_env
from tests.torture.cluster import Node, PrivatePostgres, init_nodes, lethe
from tests.torture.service_faults import Answers, Tally, private_database, tally_for
from tests.torture.stack import memory_body

pytestmark = pytest.mark.slow

KMS_TIMEOUT = 10  # seconds a key destruction waits on the stalled KMS, holding its lease
JOBS = 3
ERASURE_TIMEOUT = 120.0


def tokens(env: dict[str, str], node: Node, tenant: str) -> dict[str, str]:
    def mint(*args: str) -> str:
        r = lethe(env, node.data_dir, "token", "create", "--tenant", tenant, *args, "--json")
        assert r.returncode == 0, r.stderr
        return str(json.loads(r.stdout)["token"])

    return {
        "agent": mint("--role", "agent", "--agent", "a1", "--purpose", "support"),
        "officer": mint("--role", "privacy_officer"),
        "auditor": mint("--role", "auditor"),
    }


def http(node: Node, token: str) -> httpx.Client:
    return httpx.Client(base_url=node.url, headers={"Authorization": f"Bearer {token}"})


def watch(nodes: list[Node], tok: dict[str, str], answers: Answers, stop: threading.Event) -> None:
    """An officer listing requests and an agent searching, on both nodes, until ``stop``."""
    clients = [(http(n, tok["officer"]), http(n, tok["agent"])) for n in nodes]
    try:
        while not stop.is_set():
            for officer, agent in clients:
                answers.send(officer, "GET", "/v1/erasure-requests")
                body = {"query": "note", "purpose": "support", "limit": 5}
                answers.send(agent, "POST", "/v1/memories/search", json=body)
            stop.wait(0.2)
    finally:
        for pair in clients:
            for c in pair:
                c.close()


def held_leases(engine: sa.Engine, job_ids: list[str]) -> dict[str, str]:
    """Job id -> lease owner, for the jobs whose lease is held now."""
    q = sa.text("SELECT id, lease_owner FROM erasure_jobs WHERE id = ANY(:ids) AND lease_owner IS NOT NULL")
    with engine.connect() as conn:
        return {r.id: r.lease_owner for r in conn.execute(q, {"ids": job_ids})}


def step_events(engine: sa.Engine, job_ids: list[str]) -> Counter[tuple[str, str]]:
    """How many audit events record each (job, step): ``erasure.received`` for the filing,
    ``erasure.step`` for each step after it."""
    q = sa.text("SELECT payload FROM events WHERE type IN ('erasure.received', 'erasure.step')")
    with engine.connect() as conn:
        payloads = [json.loads(p) for p in conn.execute(q).scalars()]
    found = Counter((p["request_id"], p.get("step", "received")) for p in payloads)
    return Counter({k: n for k, n in found.items() if k[0] in job_ids})


def steps_recorded(engine: sa.Engine, job_ids: list[str]) -> dict[str, int]:
    """Step name -> how many of the jobs have recorded it."""
    q = sa.text("SELECT step, count(*) AS n FROM erasure_steps WHERE job_id = ANY(:ids) GROUP BY step")
    with engine.connect() as conn:
        return {r.step: r.n for r in conn.execute(q, {"ids": job_ids})}


def sessions(engine: sa.Engine) -> dict[str, int]:
    """The other sessions on the database by state (``idle in transaction``: a transaction open)."""
    q = sa.text(
        "SELECT coalesce(state, '?') AS state, count(*) AS n FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY state"
    )
    with engine.connect() as conn:
        return {r.state: r.n for r in conn.execute(q)}


def attempts(engine: sa.Engine, job_ids: list[str]) -> list[int]:
    """How many times each job's step was deferred (a KMS timeout, the database gone)."""
    q = sa.text("SELECT attempts FROM erasure_jobs WHERE id = ANY(:ids) ORDER BY attempts")
    with engine.connect() as conn:
        return list(conn.execute(q, {"ids": job_ids}).scalars())


def runner_cut(node: Node) -> int:
    """How many of the node's erasure-runner passes ended on the database being gone (they
    resume at the next pass)."""
    cut = '"task": "erasure_runner", "error": "StoreUnavailable"'
    return sum(cut in line for line in node.log.read_text().splitlines())


def wait_reported(officer: httpx.Client, job_ids: list[str]) -> list[dict[str, object]]:
    deadline, docs = time.monotonic() + ERASURE_TIMEOUT, []
    for job_id in job_ids:
        while True:
            r = officer.get(f"/v1/erasure-requests/{job_id}", timeout=30)
            if r.status_code == 200 and r.json()["status"] == "reported":
                docs.append(r.json())
                break
            assert time.monotonic() < deadline, f"job {job_id} stopped at {r.status_code} {r.text[:300]}"
            time.sleep(0.5)
    return docs


def store_lease_retaken(url: str) -> bool:
    """Whether the servers hold their store lease again (a restore elsewhere is refused)."""
    engine = make_engine(url)
    elsewhere = Path(tempfile.mkdtemp(prefix="lethe-other-host-"))  # its own data dir
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            try:
                with exclusive_lease(elsewhere, engine, "a restore"):
                    pass
            except StoreNotReady:
                return True
            time.sleep(0.5)
        return False
    finally:
        engine.dispose()
        shutil.rmtree(elsewhere, ignore_errors=True)


def test_a_postgres_restart_while_leases_are_held_runs_no_step_twice(  # type: ignore[no-untyped-def]
    private_postgres: PrivatePostgres,
    openbao,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    t: Tally = tally_for(request, "PostgreSQL restarted while leases are held")
    url = private_database(private_postgres)
    env = clean_env(
        LETHE_DATABASE_URL=url,
        LETHE_KMS="vault",
        LETHE_VAULT_ADDR=openbao.addr,
        LETHE_VAULT_TOKEN=openbao.token,
        LETHE_KMS_TIMEOUT_SECONDS=str(KMS_TIMEOUT),
        LETHE_ERASURE_INTERVAL_SECONDS="0.5",
    )
    nodes = init_nodes(tmp_path_factory.mktemp("lease-fault"), env, ["node-a", "node-b"])
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    tok = tokens(env, nodes[0], tenant)
    engine = sa.create_engine(url, pool_pre_ping=True)
    stop, paused = threading.Event(), False
    watcher = threading.Thread(target=watch, args=(nodes, tok, t.answers, stop), daemon=True)
    try:
        for node in nodes:
            node.start()
        subjects = [f"lease-{i}" for i in range(JOBS)]
        with http(nodes[0], tok["agent"]) as agent:
            for s in subjects:
                r = agent.post("/v1/memories", json=memory_body(s, f"{s} private note"), timeout=30)
                assert r.status_code == 201, r.text
        watcher.start()

        openbao.pause()
        paused = True
        t.faults["OpenBao stalled (no job gets past its key destruction)"] += 1
        job_ids = []
        with http(nodes[1], tok["officer"]) as officer:
            for s in subjects:
                body = {"subject_id": s, "legal_basis": "gdpr-art17-1a", "reference": f"DSR-{s}"}
                r = officer.post("/v1/erasure-requests", json=body, timeout=30)
                assert r.status_code == 202, r.text
                job_ids.append(r.json()["id"])
        deadline = time.monotonic() + 20
        while len(held := held_leases(engine, job_ids)) < len(nodes) and time.monotonic() < deadline:
            time.sleep(0.2)
        t.check(len(set(held.values())) == len(nodes), "both runners hold a lease at the restart", held)
        t.notes.append(f"{len(held)} leases held by {len(set(held.values()))} runners at the restart")

        t.answers.phase = "postgres restart"
        began = time.monotonic()
        private_postgres.restart()
        t.faults["PostgreSQL restarted (pg_ctl restart -m fast)"] += 1
        t.notes.append(f"restart took {time.monotonic() - began:.2f} s")
        t.check(held_leases(engine, job_ids) == held, "the leases survive the restart (they are rows)", held)
        t.notes.append(f"steps recorded at the restart {steps_recorded(engine, job_ids)}")
        t.notes.append(f"the servers' sessions at the restart {sessions(engine)}")
        time.sleep(1)
        openbao.resume()
        paused = False
        time.sleep(0.3)  # the runners are recording the key destruction and the steps after it
        private_postgres.restart()
        t.faults["PostgreSQL restarted again as the jobs resume"] += 1
        time.sleep(1)
        t.answers.phase = "after"

        with http(nodes[0], tok["officer"]) as officer:
            docs = wait_reported(officer, job_ids)
        with http(nodes[1], tok["auditor"]) as auditor:
            pem = auditor.get("/v1/audit/public-key", timeout=30).json()["pem"].encode()
            for doc in docs:
                steps = [s["step"] for s in doc["steps"]]  # type: ignore[attr-defined]
                t.check(len(steps) == len(set(steps)), "the API reports each step once", steps)
                events = step_events(engine, [str(doc["id"])])
                t.check(
                    set(events.values()) == {1} and {s for _, s in events} == set(steps),
                    "the audit log holds one event per step",
                    events,
                )
                cert = auditor.get(f"/v1/erasure-reports/{doc['report_id']}", timeout=30)
                result = verify_certificate(cert.content, pem, tenant=tenant)
                t.check(cert.status_code == 200 and result.ok, "the certificate verifies", result.summary())
        # A runner releases a job's lease in its own transaction just after the last step
        # commits (which is when the API shows `reported`): give it that moment on a busy machine.
        released_by = time.monotonic() + 15
        while held_leases(engine, job_ids) and time.monotonic() < released_by:
            time.sleep(0.2)
        t.check(not held_leases(engine, job_ids), "every finished job released its lease", job_ids)
        t.notes.append(f"steps deferred per job (attempts) {attempts(engine, job_ids)}")
        t.check(store_lease_retaken(url), "the servers retook their store lease after the restart")
    finally:
        if paused:
            openbao.resume()
        stop.set()
        watcher.join(timeout=60) if watcher.is_alive() else None
        for node in nodes:
            node.stop()
        engine.dispose()
        t.notes.append(f"runner passes cut by a restart {sum(runner_cut(n) for n in nodes)}")
    a = t.answers
    t.check(not a.server_errors, "no answer was a 500 (or a 503 that is not a problem)", a.server_errors)
    t.check(not a.hangs, "no request hung", a.hangs)
    t.check(set(a.by_phase.get("after", {})) <= {200}, "requests succeed after the restart", a.by_phase)
