"""Reads stop at the 202 on every node: two real ``lethe serve`` processes, one PostgreSQL.

Two nodes (each its own data dir holding a copy of the first node's ``keys/``, as
``docs/operations.md`` says) share one PostgreSQL store and one OpenBao. Their own erasure
runners are idle (an hour's interval), so between the 202 and the moment the test runs
the runner (a third process on the same store, as any node's runner is) only the read
fence can hide the subject. Read loops on both nodes (search, read by id, list of the
subject's memories) wait on an event that the 202 sets, and run until the test stops
them; they never see the subject: with the runner carrying the request through, with a
legal hold placed after the 202 (the job blocked, the officer's export still served), and
with the request paused (the job left at ``received``). The control: before the forget
the same loops on both nodes see every memory of the subject.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from tests.api.test_serve import free_port
from tests.children import clean_env, lethe_command
from tests.torture.stack import memory_body

TENANT = "t-fence"
BO = "bo@example.com"
LOOP_SECONDS = 1.0  # each phase of the loop: before the runner, and after it
HTTP = 30.0


@dataclass
class Node:
    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path


@dataclass
class Nodes:
    nodes: list[Node]
    agent: str
    officer: str
    runner: Container  # a third process's runner on the same store, run when the test says

    def client(self, node: Node, token: str) -> httpx.Client:
        return httpx.Client(base_url=node.url, timeout=HTTP, headers={"Authorization": f"Bearer {token}"})


def _mint(env: dict[str, str], data_dir: Path, *args: str) -> str:
    r = subprocess.run(
        [*lethe_command(), "token", "create", "--tenant", TENANT, *args, "--json"],
        env={**env, "LETHE_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stdout)["token"])


def _wait_ready(node: Node) -> None:
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
def nodes(tmp_path_factory: pytest.TempPathFactory, postgres, openbao) -> Iterator[Nodes]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("fence-nodes")
    db_url = postgres.create()
    env = clean_env(
        LETHE_DATABASE_URL=db_url,
        LETHE_KMS="vault",
        LETHE_VAULT_ADDR=openbao.addr,
        LETHE_VAULT_TOKEN=openbao.token,
        LETHE_RATE_LIMIT="100000/minute",
        LETHE_AUTH_FAILURE_RATE_LIMIT="100000/minute",
        LETHE_ERASURE_INTERVAL_SECONDS="3600",  # the nodes' runners stay out: only the fence hides
        LETHE_SWEEP_INTERVAL_SECONDS="3600",
    )
    dirs = [root / "node-a", root / "node-b", root / "runner"]
    init = subprocess.run(
        [*lethe_command(), "init"],
        env={**env, "LETHE_DATA_DIR": str(dirs[0])},
        capture_output=True,
        check=False,
    )
    assert init.returncode == 0, init.stderr
    for other in dirs[1:]:
        shutil.copytree(dirs[0] / "keys", other / "keys")  # the operator's step: one pepper, one signing key
    started = []
    for name, data_dir in zip(("node-a", "node-b"), dirs, strict=False):
        port, log = free_port(), root / f"{name}.log"
        argv = [*lethe_command(), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, env={**env, "LETHE_DATA_DIR": str(data_dir)}, stdout=out, stderr=subprocess.STDOUT
            )
        started.append(Node(name, f"http://127.0.0.1:{port}", proc, log))
    settings = Settings(
        data_dir=dirs[2],
        database_url=db_url,
        kms="vault",
        vault_addr=openbao.addr,
        vault_token=SecretStr(openbao.token),
    )
    runner = build(settings)
    try:
        for node in started:
            _wait_ready(node)
        agent = _mint(env, dirs[0], "--role", "agent", "--agent", "a1", "--purpose", "support")
        officer = _mint(env, dirs[0], "--role", "privacy_officer")
        yield Nodes(started, agent, officer, runner)
    finally:
        runner.close()
        for node in started:
            node.proc.send_signal(signal.SIGTERM)
        for node in started:
            try:
                node.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                node.proc.kill()
        postgres.drop(db_url)


@dataclass
class Seen:
    """What one node's read loop saw of the subject, round after round."""

    rounds: int = 0
    searched: set[str] = field(default_factory=set)  # subject ids a search returned
    served: set[str] = field(default_factory=set)  # subject ids a read by id served
    listed: set[str] = field(default_factory=set)  # subject ids the list returned
    other_found: int = 0  # rounds whose search returned the other subject (the search works)
    errors: list[str] = field(default_factory=list)

    @property
    def anything(self) -> set[str]:
        return self.searched | self.served | self.listed


def one_round(client: httpx.Client, subject: str, ids: list[str], other: str, seen: Seen) -> None:
    search = client.post("/v1/memories/search", json={"query": "tea", "purpose": "support", "limit": 50})
    listed = client.post("/v1/memories/list", json={"subject_id": subject})
    if search.status_code != 200 or listed.status_code != 200:
        seen.errors.append(f"search {search.status_code}, list {listed.status_code}")
        return
    found = {i["id"] for i in search.json()["items"]}
    seen.searched |= found & set(ids)
    seen.other_found += other in found
    seen.listed |= {i["id"] for i in listed.json()["items"]} & set(ids)
    for memory_id in ids:
        got = client.get(f"/v1/memories/{memory_id}")
        if got.status_code == 200:
            seen.served.add(memory_id)
        elif got.status_code != 404:
            seen.errors.append(f"GET {got.status_code}")
    seen.rounds += 1


class ReadLoops:
    """A read loop per node, each waiting on ``go`` (set the moment the 202 arrives)."""

    def __init__(self, d: Nodes, subject: str, ids: list[str], other: str) -> None:
        self.go, self.stop = threading.Event(), threading.Event()
        self.seen = [Seen() for _ in d.nodes]
        self.threads = [
            threading.Thread(target=self._loop, args=(d, node, subject, ids, other, seen), daemon=True)
            for node, seen in zip(d.nodes, self.seen, strict=True)
        ]
        for t in self.threads:
            t.start()

    def _loop(self, d: Nodes, node: Node, subject: str, ids: list[str], other: str, seen: Seen) -> None:
        with d.client(node, d.agent) as client:
            client.post("/v1/memories/search", json={"query": "warm", "purpose": "support"})  # connect
            self.go.wait()
            while not self.stop.is_set():
                one_round(client, subject, ids, other, seen)

    def finish(self) -> list[Seen]:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)
        return self.seen


def seed(d: Nodes) -> tuple[str, list[str], str]:
    """A subject of its own with three memories about tea, and another subject's memory."""
    subject = f"ana-{uuid.uuid4().hex[:8]}@example.com"
    with d.client(d.nodes[0], d.agent) as a:
        other = a.post("/v1/memories", json=memory_body(BO, f"Bo prefers black tea {uuid.uuid4().hex[:6]}"))
        assert other.status_code == 201, other.text
        ids = []
        for text in ("prefers green tea", "orders oolong tea", "drinks tea at noon"):
            r = a.post("/v1/memories", json=memory_body(subject, text))
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
    return subject, ids, other.json()["id"]


def control(d: Nodes, subject: str, ids: list[str], other: str) -> None:
    """Before the forget, the same loop on both nodes sees every memory of the subject."""
    for node in d.nodes:
        with d.client(node, d.agent) as client:
            seen = Seen()
            one_round(client, subject, ids, other, seen)
            assert seen.searched == seen.served == seen.listed == set(ids), (node.name, seen)
            assert seen.other_found == 1 and not seen.errors


def file_then_read(
    d: Nodes, after_202: Callable[[httpx.Client, str, str], Any]
) -> tuple[str, list[Seen], Any]:
    """File on node A with both loops waiting; start them the moment the 202 arrives, do
    ``after_202`` on node B, read for a while, run the runner, read a while more."""
    subject, ids, other = seed(d)
    control(d, subject, ids, other)
    loops = ReadLoops(d, subject, ids, other)
    with d.client(d.nodes[0], d.officer) as a, d.client(d.nodes[1], d.officer) as b:
        body = {"subject_id": subject, "legal_basis": "gdpr-art17-1a", "reference": "DSR-fence"}
        filed = a.post("/v1/erasure-requests", json=body)
        loops.go.set()
        assert filed.status_code == 202, filed.text
        job_id = filed.json()["id"]
        extra = after_202(b, job_id, subject)
        time.sleep(LOOP_SECONDS)
        d.runner.erasure.run_pending()  # a runner on the same store: advances what it may
        time.sleep(LOOP_SECONDS)
        seen = loops.finish()
        status = b.get(f"/v1/erasure-requests/{job_id}").json()["status"]
    for node, s in zip(d.nodes, seen, strict=True):
        assert not s.errors, (node.name, s.errors[:3])
        assert not s.anything, (node.name, s)
        assert s.rounds >= 3 and s.other_found == s.rounds, (node.name, s)
    return status, seen, extra


def test_a_read_loop_started_at_the_202_never_sees_the_subject_on_either_node(nodes: Nodes) -> None:
    status, _, _ = file_then_read(nodes, lambda b, job_id, subject: None)
    assert status == "reported"  # the fence, then the tombstone: no moment between them shows the subject


def test_a_hold_placed_after_the_202_keeps_the_subject_from_agents_on_both_nodes(nodes: Nodes) -> None:
    def hold(b: httpx.Client, job_id: str, subject: str) -> int:
        r = b.post("/v1/legal-holds", json={"subject_id": subject, "reason": "litigation L-9"})
        assert r.status_code == 201, r.text
        return len(b.post("/v1/subject-access-requests", json={"subject_id": subject}).json()["items"])

    status, _, exported = file_then_read(nodes, hold)
    assert status == "blocked"  # the hold stopped destruction...
    assert exported == 3  # ...and kept the officer's access: not the agents'


def test_a_paused_request_keeps_the_subject_from_agents_on_both_nodes(nodes: Nodes) -> None:
    def pause(b: httpx.Client, job_id: str, subject: str) -> None:
        r = b.post(f"/v1/erasure-requests/{job_id}/pause")
        assert r.status_code == 200, r.text

    status, _, _ = file_then_read(nodes, pause)
    assert status == "received"  # paused: the runner ran no step, the fence alone hides the subject
