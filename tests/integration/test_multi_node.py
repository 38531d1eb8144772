"""Several `lethe serve` nodes on one PostgreSQL, one OpenBao and one Redis: one truth.

The deployment is the documented one, run as written: ``docs/examples/multi-node/nodes.env``
and its ``Procfile`` (two nodes of two worker processes each). Each node has its own data
dir holding a copy of the first node's ``keys/`` (pepper and signing key), as
``docs/operations.md`` tells an operator to do. Redis is a private ``redis-server`` on a free
port (``tests.torture.cluster``), so the test can stall it without touching the machine's own.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from string import Template

import httpx
import pytest

from tests.api.test_serve import free_port, lethe_command
from tests.children import clean_env
from tests.torture.cluster import PrivateRedis
from tests.torture.stack import memory_body, request_erasure

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "multi-node"
RATE_LIMIT = 40  # requests per minute per token, counted across every node and worker
HTTP = 30.0


@dataclass
class Node:
    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path


@dataclass
class Deployment:
    nodes: list[Node]
    env: dict[str, str]
    redis: PrivateRedis
    data_dirs: list[Path]

    def mint(self, *args: str) -> str:
        r = subprocess.run(
            [*lethe_command(), "token", "create", *args, "--json"],
            env={**self.env, "LETHE_DATA_DIR": str(self.data_dirs[0])},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert r.returncode == 0, r.stderr

        return json.loads(r.stdout)["token"]

    def client(self, node: Node, token: str) -> httpx.Client:
        return httpx.Client(base_url=node.url, timeout=HTTP, headers={"Authorization": f"Bearer {token}"})


def node_environment(values: dict[str, str]) -> dict[str, str]:
    """nodes.env as a node sees it: KEY=value lines with ${...} filled in."""
    env = {}
    for line in (EXAMPLE / "nodes.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = Template(value).substitute(values)
    return env


def procfile(values: dict[str, str]) -> list[tuple[str, list[str]]]:
    out = []
    for line in (EXAMPLE / "Procfile").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, command = line.partition(":")
            argv = shlex.split(Template(command).substitute(values))
            assert argv[0] == "lethe"
            out.append((name.strip(), [*lethe_command(), *argv[1:]]))
    return out


def wait_healthy(node: Node) -> None:
    deadline = time.monotonic() + 90
    while True:
        assert node.proc.poll() is None, f"{node.name} exited:\n{node.log.read_text()[-3000:]}"
        try:
            if httpx.get(f"{node.url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{node.name} did not become ready"
        time.sleep(0.25)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, postgres, openbao) -> Iterator[Deployment]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("multi-node")
    redis = PrivateRedis()
    redis.start()
    db_url = postgres.create()
    values = {
        "DATABASE_URL": db_url,
        "VAULT_ADDR": openbao.addr,
        "VAULT_TOKEN": openbao.token,
        "REDIS_URL": redis.url,
        "RATE_LIMIT": f"{RATE_LIMIT}/minute",
        "NODE_A_PORT": str(free_port()),
        "NODE_B_PORT": str(free_port()),
    }
    env = clean_env(**node_environment(values))
    dirs = [root / "node-a", root / "node-b"]
    init = subprocess.run(
        [*lethe_command(), "init"],
        env={**env, "LETHE_DATA_DIR": str(dirs[0])},
        capture_output=True,
        text=True,
        check=False,
    )
    assert init.returncode == 0, init.stderr
    shutil.copytree(dirs[0] / "keys", dirs[1] / "keys")  # the operator's step: one pepper, one signing key
    nodes = []
    for (name, argv), data_dir in zip(procfile(values), dirs, strict=True):
        log = root / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, env={**env, "LETHE_DATA_DIR": str(data_dir)}, stdout=out, stderr=subprocess.STDOUT
            )
        port = argv[argv.index("--port") + 1]
        nodes.append(Node(name, f"http://127.0.0.1:{port}", proc, log))
    try:
        for node in nodes:
            wait_healthy(node)
        yield Deployment(nodes, env, redis, dirs)
    finally:
        for node in nodes:
            node.proc.send_signal(signal.SIGTERM)
        for node in nodes:
            try:
                node.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                node.proc.kill()
        redis.stop()
        postgres.drop(db_url)


def agent_token(d: Deployment, tenant: str) -> str:
    return d.mint("--tenant", tenant, "--role", "agent", "--agent", "a1", "--purpose", "support")


def test_a_memory_written_on_one_node_is_read_on_every_node(deployment: Deployment) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    token = agent_token(deployment, tenant)
    a, b = (deployment.client(n, token) for n in deployment.nodes)
    with a, b:
        r = a.post("/v1/memories", json=memory_body("alice", "prefers green tea"))
        assert r.status_code == 201, r.text
        for _ in range(4):  # two workers per node: ask often enough to reach both
            got = b.get(f"/v1/memories/{r.json()['id']}")
            assert got.status_code == 200 and got.json()["content"] == "prefers green tea"


def test_a_write_on_one_node_is_found_by_the_next_search_of_a_scope_every_node_keeps(
    deployment: Deployment,
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    token = agent_token(deployment, tenant)
    a, b = (deployment.client(n, token) for n in deployment.nodes)
    with a, b:
        assert a.post("/v1/memories", json=memory_body("alice", "prefers green tea")).status_code == 201
        search = {"query": "espresso afternoon", "purpose": "support"}
        for client in (a, b):  # every worker of every node searches the scope, and keeps it
            for _ in range(4):
                r = client.post("/v1/memories/search", json=search)
                assert r.status_code == 200 and "espresso" not in r.text
        r = a.post("/v1/memories", json=memory_body("alice", "orders an espresso every afternoon"))
        assert r.status_code == 201, r.text
        for client in (b, a):
            for _ in range(4):
                found = client.post("/v1/memories/search", json=search).json()["items"]
                assert [i["content"] for i in found][:1] == ["orders an espresso every afternoon"]


def test_a_token_revoked_through_one_node_is_refused_by_its_next_search_or_write_on_every_node(
    deployment: Deployment,
) -> None:
    # Every worker has searched with the token, so each remembers it and no longer looks it
    # up: the search's own statement reads the revocation (``vault.access.known_tokens``).
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    admin_token = deployment.mint("--tenant", tenant, "--role", "admin")
    body = {"role": "agent", "agent_id": "a1", "purposes": ["support"]}
    with deployment.client(deployment.nodes[0], admin_token) as admin:
        minted = admin.post("/v1/admin/tokens", json=body)
        assert minted.status_code == 201, minted.text
        a, b = (deployment.client(n, minted.json()["token"]) for n in deployment.nodes)
        searches = [{"query": "green tea", "purpose": "support"}, {"query": "a", "purpose": "support"}]
        with a, b:
            assert a.post("/v1/memories", json=memory_body("alice", "prefers green tea")).status_code == 201
            for client in (a, b):
                for _ in range(4):  # two workers per node: ask often enough to reach both
                    r = client.post("/v1/memories/search", json=searches[0])
                    assert r.status_code == 200 and r.json()["items"], r.text
            assert admin.delete(f"/v1/admin/tokens/{minted.json()['id']}").status_code == 204
            for client in (b, a):  # each worker's first request after the revocation reads it itself
                r = client.post("/v1/memories", json=memory_body("alice", "prefers oolong"))
                assert r.status_code == 401, r.text
                for i in range(4):  # with query terms (read with the scope's token) and without
                    r = client.post("/v1/memories/search", json=searches[i % 2])
                    assert r.status_code == 401 and r.headers["content-type"].startswith(
                        "application/problem+json"
                    )


def test_a_subject_forgotten_through_one_node_is_unreadable_on_every_node(deployment: Deployment) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    token = agent_token(deployment, tenant)
    officer_token = deployment.mint("--tenant", tenant, "--role", "privacy_officer")
    agents = [deployment.client(n, token) for n in deployment.nodes]
    ids = []
    for i in range(3):
        r = agents[i % 2].post("/v1/memories", json=memory_body("bob", f"bob note {i}"))
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    for client in agents:  # every worker of every node now holds bob's data key in its cache
        for _ in range(4):
            assert all(client.get(f"/v1/memories/{i}").status_code == 200 for i in ids)
        client.close()

    with deployment.client(deployment.nodes[0], officer_token) as officer:
        job_id = request_erasure(officer, "bob")
        deadline = time.monotonic() + 120
        while (job := officer.get(f"/v1/erasure-requests/{job_id}").json())["status"] != "reported":
            assert time.monotonic() < deadline, f"the erasure stopped at {job['status']}"
            time.sleep(1.0)
    with deployment.client(deployment.nodes[1], officer_token) as officer_b:
        seen_b = officer_b.get(f"/v1/erasure-requests/{job_id}").json()
        report = officer_b.get(f"/v1/erasure-reports/{seen_b['report_id']}")
    assert seen_b["status"] == "reported"
    assert report.status_code == 200 and report.json()["signature"]

    fresh = agent_token(deployment, tenant)  # same scope, its own rate-limit budget
    for client in (deployment.client(n, fresh) for n in deployment.nodes):
        for _ in range(4):
            for i in ids:
                r = client.get(f"/v1/memories/{i}")
                assert r.status_code in (404, 410), (client.base_url, r.status_code)
                assert "bob note" not in r.text
        found = client.post("/v1/memories/search", json={"query": "bob note", "purpose": "support"})
        assert found.status_code == 200 and found.json()["items"] == []
        client.close()


def test_a_write_with_a_key_another_node_cached_is_fenced_then_takes_the_reinstated_generation(
    deployment: Deployment,
) -> None:
    """Writers serve the subject's key from their cache without a read; the write's own
    transaction checks it. Every worker of both nodes caches carol's key, node A forgets and
    reinstates her: node B's workers refuse writes while she is forgotten, then write under
    the new generation (their cached key is stale, not used)."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    token = agent_token(deployment, tenant)
    officer_token = deployment.mint("--tenant", tenant, "--role", "privacy_officer")
    a, b = (deployment.client(n, token) for n in deployment.nodes)
    with a, b:
        for i in range(4):  # enough writes to reach both workers of each node
            for client in (a, b):
                r = client.post("/v1/memories", json=memory_body("carol", f"carol note {i}"))
                assert r.status_code == 201, r.text
        with deployment.client(deployment.nodes[0], officer_token) as officer:
            job_id = request_erasure(officer, "carol")
            deadline = time.monotonic() + 120
            while officer.get(f"/v1/erasure-requests/{job_id}").json()["status"] != "reported":
                assert time.monotonic() < deadline
                time.sleep(1.0)
            for _ in range(4):
                r = b.post("/v1/memories", json=memory_body("carol", "carol is back"))
                assert r.status_code == 409, r.text
                assert r.headers["content-type"].startswith("application/problem+json")
            r = officer.post("/v1/subject-reinstatements", json={"subject_id": "carol", "reason": "consent"})
            assert r.status_code in (200, 201), r.text
        written = []
        for i in range(4):
            r = b.post("/v1/memories", json=memory_body("carol", f"carol returns {i}"))
            assert r.status_code == 201, r.text
            written.append(r.json()["id"])
        for memory_id in written:
            got = a.get(f"/v1/memories/{memory_id}")
            assert got.status_code == 200 and got.json()["content"].startswith("carol returns")


def test_each_erasure_step_runs_once_with_four_runners(deployment: Deployment) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    token = agent_token(deployment, tenant)
    officer_token = deployment.mint("--tenant", tenant, "--role", "privacy_officer")
    with deployment.client(deployment.nodes[1], token) as agent:
        for s in ("c1", "c2", "c3"):
            assert agent.post("/v1/memories", json=memory_body(s, f"{s} likes chess")).status_code == 201
    with deployment.client(deployment.nodes[1], officer_token) as officer:
        jobs = [request_erasure(officer, s) for s in ("c1", "c2", "c3")]
        deadline = time.monotonic() + 120
        done: dict[str, dict] = {}  # type: ignore[type-arg]
        while len(done) < len(jobs):
            assert time.monotonic() < deadline, f"not all reported: {sorted(done)}"
            for j in jobs:
                if j not in done and (job := officer.get(f"/v1/erasure-requests/{j}").json())["status"] == (
                    "reported"
                ):
                    done[j] = job
            time.sleep(1.0)
    for job in done.values():
        names = [step["step"] for step in job["steps"]]
        assert len(names) == len(set(names)), f"a step ran twice: {names}"
    verify = subprocess.run(
        [*lethe_command(), "audit", "verify"],
        env={**deployment.env, "LETHE_DATA_DIR": str(deployment.data_dirs[1])},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert verify.returncode == 0, verify.stderr + verify.stdout


def test_rate_limits_are_counted_across_every_node_and_worker(deployment: Deployment) -> None:
    token = agent_token(deployment, f"t-{uuid.uuid4().hex[:8]}")
    clients = [deployment.client(n, token) for n in deployment.nodes]
    statuses = []
    for i in range(RATE_LIMIT + 1):  # per-process counting would allow 4 x RATE_LIMIT
        statuses.append(clients[i % 2].get("/v1/memories/00000000000000000000000000").status_code)
    for c in clients:
        c.close()
    assert statuses[:RATE_LIMIT].count(429) == 0
    assert statuses[-1] == 429


def test_a_stalled_or_stopped_redis_gives_503_problems_never_500s(deployment: Deployment) -> None:
    token = agent_token(deployment, f"t-{uuid.uuid4().hex[:8]}")
    node = deployment.nodes[0]
    with deployment.client(node, token) as client:
        deployment.redis.signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            r = client.get("/v1/memories/00000000000000000000000000")
            stalled_for = time.monotonic() - started
            ready = httpx.get(f"{node.url}/readyz", timeout=HTTP)
        finally:
            deployment.redis.signal(signal.SIGCONT)
        assert r.status_code == 503, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "Retry-After" in r.headers
        assert stalled_for < 10, "a stalled Redis must not hang requests"
        assert ready.status_code == 503 and "rate limit storage" in ready.text
        deadline = time.monotonic() + 20
        while (r := client.get("/v1/memories/00000000000000000000000000")).status_code == 503:
            assert time.monotonic() < deadline, "requests did not recover after Redis resumed"
            time.sleep(0.5)
        assert r.status_code == 404
