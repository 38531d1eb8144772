"""Faults under load: two `lethe serve` nodes on one PostgreSQL, OpenBao and Redis.

While writers and searchers keep both nodes busy, one fault at a time: a node SIGKILLed in
the middle of erasures, a node SIGKILLed in the middle of writes, PostgreSQL stopped for a
few seconds, OpenBao stalled (SIGSTOP/SIGCONT), Redis stopped. After each fault, with the
deployment recovered, the invariants are checked:

- every acknowledged write reads back, content intact, on every node;
- no forgotten subject is readable on any node, by id or by search;
- every erasure is ``reported`` once (no step recorded twice), with one certificate that
  verifies offline against the served public key;
- clients saw only 503 problems during outages: never a 500, never a hang past the timeout
  (connection errors only from a node while it was killed).
At the end ``lethe audit verify`` and ``lethe replay --check`` pass. How many faults were
injected and how many invariant checks passed is printed in the run's closing summary, also
when the run failed part way (``tests.tallies``).
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

import httpx
import pytest

from lethe.api.store_lease import exclusive_lease
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.errors import StoreNotReady
from lethe.vault.store.db import make_engine
from tests.children import clean_env
from tests.tallies import report_at_end
from tests.torture.cluster import Node, PrivatePostgres, PrivateRedis, init_nodes, lethe
from tests.torture.stack import memory_body

pytestmark = pytest.mark.slow

HTTP_TIMEOUT = 30.0  # a request that takes longer than this is a hang
OUTAGE_SECONDS = 3.0
ERASURE_TIMEOUT = 120.0
WRITERS = 2


@dataclass
class Ledger:
    """What the clients saw: acknowledged writes, forgotten subjects, every answer."""

    acked: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (subject, content)
    forgotten: set[str] = field(default_factory=set)
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    refused_while_down: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, what: str, r: httpx.Response) -> None:
        with self.lock:
            self.statuses[r.status_code] += 1
            if r.status_code >= 500 and r.status_code != 503:
                self.server_errors.append(f"{what} -> {r.status_code}")
            if r.status_code == 503 and not r.headers.get("content-type", "").startswith(
                "application/problem+json"
            ):
                self.server_errors.append(f"{what} -> 503 that is not a problem document")


@dataclass
class Cluster:
    nodes: list[Node]
    env: dict[str, str]
    pg: PrivatePostgres
    redis: PrivateRedis
    bao: object
    tenant: str
    agent: str
    officer: str
    auditor: str
    ledger: Ledger = field(default_factory=Ledger)
    down: set[str] = field(default_factory=set)  # nodes being killed or restarted
    faults: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)

    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.name not in self.down]

    def call(self, node: Node, token: str, method: str, path: str, **kw: object) -> httpx.Response | None:
        """One request; None if the node was down (connection refused or cut) — anything else is recorded."""
        what = f"{method} {path.split('?')[0]} @{node.name}"
        try:
            r = httpx.request(
                method,
                node.url + path,
                headers={"Authorization": f"Bearer {token}"},
                timeout=HTTP_TIMEOUT,
                **kw,  # type: ignore[arg-type]
            )
        except httpx.TimeoutException:
            with self.ledger.lock:
                self.ledger.hangs.append(what)
            return None
        except httpx.TransportError:
            if node.name in self.down or not node.alive:
                with self.ledger.lock:
                    self.ledger.refused_while_down += 1
                return None
            raise
        self.ledger.answer(what, r)
        return r


class Load:
    """Writers and a searcher on every live node until stopped."""

    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster
        self.stop = threading.Event()
        self.seq = count()
        self.errors: list[BaseException] = []
        jobs = [self._write] * WRITERS + [self._search]
        self.threads = [threading.Thread(target=self._guard(job), daemon=True) for job in jobs]

    def _guard(self, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                while not self.stop.is_set():
                    fn()
            except BaseException as exc:  # surfaced by __exit__
                self.errors.append(exc)

        return run

    def _node(self) -> Node | None:
        live = self.c.live()
        return live[next(self.seq) % len(live)] if live else None

    def _write(self) -> None:
        node = self._node()
        if node is None:
            time.sleep(0.05)
            return
        n = next(self.seq)
        subject, content = f"load-{n % 12}", f"load note {n} {uuid.uuid4().hex[:6]}"
        r = self.c.call(node, self.c.agent, "POST", "/v1/memories", json=memory_body(subject, content))
        if r is not None and r.status_code == 201:
            with self.c.ledger.lock:
                self.c.ledger.acked[r.json()["id"]] = (subject, content)
        elif r is None or r.status_code == 503:
            time.sleep(0.1)

    def _search(self) -> None:
        node = self._node()
        if node is not None:
            body = {"query": "load note", "purpose": "support", "limit": 5}
            self.c.call(node, self.c.agent, "POST", "/v1/memories/search", json=body)
        time.sleep(0.05)

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=HTTP_TIMEOUT + 10)
        assert not self.errors, self.errors


# -- the deployment ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(  # type: ignore[no-untyped-def]
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config, openbao
) -> Iterator[Cluster]:
    pg, redis = PrivatePostgres(), PrivateRedis()
    pg.start()
    redis.start()
    env = {
        "LETHE_DATABASE_URL": pg.url,
        "LETHE_KMS": "vault",
        "LETHE_VAULT_ADDR": openbao.addr,
        "LETHE_VAULT_TOKEN": openbao.token,
        "LETHE_KMS_TIMEOUT_SECONDS": "2",
        "LETHE_RATE_LIMIT_STORAGE": redis.url,
        "LETHE_RATE_LIMIT": "1000000/minute",
        "LETHE_ERASURE_INTERVAL_SECONDS": "0.5",
    }
    env = clean_env(**env)
    nodes = init_nodes(tmp_path_factory.mktemp("faults"), env, ["node-a", "node-b"])
    try:
        for node in nodes:
            node.start()
        tenant = f"t-{uuid.uuid4().hex[:8]}"

        def mint(*args: str) -> str:
            r = lethe(env, nodes[0].data_dir, "token", "create", "--tenant", tenant, *args, "--json")
            assert r.returncode == 0, r.stderr
            return json.loads(r.stdout)["token"]

        c = Cluster(
            nodes,
            env,
            pg,
            redis,
            openbao,
            tenant,
            agent=mint("--role", "agent", "--agent", "a1", "--purpose", "support"),
            officer=mint("--role", "privacy_officer"),
            auditor=mint("--role", "auditor"),
        )
        try:
            yield c
        finally:
            report_at_end(pytestconfig, tally(c))
    finally:
        for node in nodes:
            node.stop()
        redis.stop()
        pg.cleanup()


# -- faults ----------------------------------------------------------------------------------


def restart(c: Cluster, node: Node) -> None:
    node.start()
    c.down.discard(node.name)


def kill(c: Cluster, node: Node) -> None:
    c.down.add(node.name)
    node.kill()
    c.faults["node SIGKILL"] += 1


def outage(c: Cluster, what: str, stop: Callable[[], None], start: Callable[[], None]) -> None:
    stop()
    c.faults[what] += 1
    try:
        time.sleep(OUTAGE_SECONDS)
    finally:
        start()


def file_erasures(c: Cluster, subjects: list[str]) -> dict[str, str]:
    """Write for each subject (acknowledged), then file its erasure; subject -> job id."""
    node = c.live()[0]
    for s in subjects:
        r = c.call(node, c.agent, "POST", "/v1/memories", json=memory_body(s, f"{s} private note"))
        assert r is not None and r.status_code == 201, r and r.text
    jobs = {}
    for s in subjects:
        body = {"subject_id": s, "legal_basis": "gdpr-art17-1a", "reference": f"DSR-{uuid.uuid4().hex[:8]}"}
        r = c.call(node, c.officer, "POST", "/v1/erasure-requests", json=body)
        assert r is not None and r.status_code == 202, r and r.text
        jobs[s] = r.json()["id"]
        c.ledger.forgotten.add(s)
    return jobs


# -- invariants ------------------------------------------------------------------------------


def check_invariants(c: Cluster, jobs: dict[str, str]) -> None:
    for node in c.nodes:
        node.wait_ready()
    wait_reported(c, jobs)
    check_erasures(c, jobs)
    check_acknowledged_writes(c)
    check_forgotten_unreadable(c)
    assert not c.ledger.server_errors, c.ledger.server_errors
    assert not c.ledger.hangs, c.ledger.hangs
    c.checks["no 500 and no hang"] += 1


def wait_reported(c: Cluster, jobs: dict[str, str]) -> None:
    deadline = time.monotonic() + ERASURE_TIMEOUT
    for subject, job_id in jobs.items():
        while True:
            r = c.call(c.nodes[0], c.officer, "GET", f"/v1/erasure-requests/{job_id}")
            if r is not None and r.status_code == 200 and r.json()["status"] == "reported":
                break
            assert time.monotonic() < deadline, f"erasure of {subject} stopped at {r and r.json()['status']}"
            time.sleep(0.5)


def check_erasures(c: Cluster, jobs: dict[str, str]) -> None:
    key = c.call(c.nodes[1], c.auditor, "GET", "/v1/audit/public-key")
    assert key is not None and key.status_code == 200
    pem = key.json()["pem"].encode()
    for job_id in jobs.values():
        seen = [c.call(n, c.officer, "GET", f"/v1/erasure-requests/{job_id}") for n in c.nodes]
        docs = [r.json() for r in seen if r is not None]
        assert len(docs) == len(c.nodes)
        assert len({d["report_id"] for d in docs}) == 1, "the nodes disagree on the certificate"
        steps = [s["step"] for s in docs[0]["steps"]]
        assert len(steps) == len(set(steps)), f"a step was recorded twice: {steps}"
        cert = c.call(c.nodes[1], c.officer, "GET", f"/v1/erasure-reports/{docs[0]['report_id']}")
        assert cert is not None and cert.status_code == 200
        result = verify_certificate(cert.content, pem, tenant=c.tenant)
        assert result.ok, result.summary()
        c.checks["erasure reported once, certificate verifies"] += 1


def check_acknowledged_writes(c: Cluster) -> None:
    with c.ledger.lock:
        acked = dict(c.ledger.acked)
    for node in c.nodes:
        with httpx.Client(
            base_url=node.url, timeout=HTTP_TIMEOUT, headers={"Authorization": f"Bearer {c.agent}"}
        ) as http:
            for memory_id, (subject, content) in acked.items():
                r = http.get(f"/v1/memories/{memory_id}")
                if subject in c.ledger.forgotten:
                    assert r.status_code in (404, 410)
                else:
                    assert r.status_code == 200, (node.name, memory_id, r.status_code)
                    assert r.json()["content"] == content
        c.checks["acknowledged writes readable"] += len(acked)


def check_forgotten_unreadable(c: Cluster) -> None:
    for node in c.nodes:
        for subject in c.ledger.forgotten:
            body = {"query": f"{subject} private note", "purpose": "support", "subject_id": subject}
            r = c.call(node, c.agent, "POST", "/v1/memories/search", json=body)
            assert r is not None and r.status_code in (200, 404, 409, 410)
            assert "private note" not in r.text
            c.checks["forgotten subject unreadable"] += 1


def check_servers_hold_their_lease(c: Cluster) -> None:
    """The restart dropped the servers' advisory locks; they must have taken them again, so a
    restore from another host (its own data dir, the same database) is refused."""
    engine = make_engine(c.pg.url)
    elsewhere = Path(tempfile.mkdtemp(prefix="lethe-other-host-"))
    deadline = time.monotonic() + 20
    try:
        while True:
            try:
                with exclusive_lease(elsewhere, engine, "a restore"):
                    taken = True
            except StoreNotReady:
                break
            assert taken and time.monotonic() < deadline, "a restore could take the store from live servers"
            time.sleep(0.5)
    finally:
        engine.dispose()
    c.checks["server leases retaken after the database restart"] += 1


# -- the run ---------------------------------------------------------------------------------


def test_every_promise_holds_through_node_kills_and_service_outages(cluster: Cluster) -> None:
    c = cluster
    a, b = c.nodes

    # 1. A node killed in the middle of erasures: the other node's runner finishes them.
    with Load(c):
        time.sleep(1)
        jobs = file_erasures(c, ["kill-1", "kill-2", "kill-3"])
        time.sleep(0.3)
        kill(c, a)
        time.sleep(2)
        restart(c, a)
    check_invariants(c, jobs)

    # 2. A node killed in the middle of writes.
    with Load(c):
        time.sleep(2)
        kill(c, b)
        time.sleep(1)
        restart(c, b)
        time.sleep(1)
    check_invariants(c, {})

    # 3. PostgreSQL stopped for a few seconds under load, with an erasure in flight.
    with Load(c):
        time.sleep(1)
        jobs = file_erasures(c, ["pg-1"])
        outage(c, "PostgreSQL stopped", c.pg.stop, c.pg.start)
        time.sleep(2)
    check_invariants(c, jobs)
    check_servers_hold_their_lease(c)

    # 4. OpenBao stalled (SIGSTOP) for a few seconds, with an erasure in flight.
    with Load(c):
        time.sleep(1)
        jobs = file_erasures(c, ["bao-1"])
        outage(c, "OpenBao stalled", c.bao.pause, c.bao.resume)  # type: ignore[attr-defined]
        time.sleep(2)
    check_invariants(c, jobs)

    # 5. Redis stopped: rate-limited requests answer 503 until it is back.
    before = c.ledger.statuses[503]
    with Load(c):
        time.sleep(1)
        outage(c, "Redis stopped", c.redis.stop, c.redis.start)
        time.sleep(2)
    assert c.ledger.statuses[503] > before, "requests during the Redis outage were not refused with 503"
    check_invariants(c, {})

    audit = lethe(c.env, a.data_dir, "audit", "verify")
    assert audit.returncode == 0, audit.stderr + audit.stdout
    replay = lethe(c.env, b.data_dir, "replay", "--check")
    assert replay.returncode == 0, replay.stderr + replay.stdout
    c.checks["audit verify"] += 1
    c.checks["replay --check"] += 1


def tally(c: Cluster) -> str:
    """What the run did: faults injected, invariant checks passed, the answers clients saw."""
    return (
        f"fault injection: {sum(c.faults.values())} faults injected ({dict(c.faults)}); "
        f"{sum(c.checks.values())} invariant checks passed ({dict(c.checks)}); "
        f"answers {dict(c.ledger.statuses)}; "
        f"{c.ledger.refused_while_down} connections refused by a node while it was down"
    )
