"""The residue suite's deployment: two real ``lethe serve`` processes on one store (node A with
two workers, node B with one), a subject seeded with distinctive facts, another subject's
summary built on them, a backup taken before the forget, and the forget itself to its
certificate. One deployment per backend, shared by every probe.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from lethe.api.first_admin import ADMIN_TOKEN_FILE
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.client import LetheClient
from lethe.integrations.langgraph import LetheStore
from tests.api.test_serve import Server, free_port
from tests.children import lethe_command, lethe_env

SUBJECT = "Zoë-Ångström-4471"  # NFC, as Lethe keys it (LangGraph labels allow no ".")
NAME = "Zoë Ångström"
OTHER = "bo.lindqvist@example.com"
SOURCE_REF = "crm-note-zoe-8841"
URL = "https://residue.example.org/zoe-cello"
LANGGRAPH_KEY = "seat-preference"
ID_KEY = "residue-suite-id-key-0123"

# The subject's facts: (kind, content, source); each has its own distinctive strings.
FACTS = {
    "account": ("fact", f"{NAME}'s loyalty account number is 7731-4409", "user_statement"),
    "tea": ("preference", f"{NAME} drinks oolong tea with oat milk every morning", "user_statement"),
    "home": ("fact", f"{NAME} lives in Tromsø and cycles to the harbour", "user_statement"),
    "allergy": ("fact", f"{NAME} is allergic to hazelnuts and carries an epipen", "user_statement"),
    "cello": ("fact", f"{NAME} plays the cello in a chamber orchestra on Thursdays", "web_page"),
}
STRINGS = ("7731-4409", "oolong", "Tromsø", "hazelnut", "epipen", "cello", "aisle seat", NAME, SUBJECT)
STRINGS += (SOURCE_REF, URL)
SUMMARY = f"Household notes for Bo: his partner {NAME} drinks oolong, lives in Tromsø, avoids hazelnuts"
OTHERS = (
    "Bo Lindqvist prefers black coffee without sugar",
    "Bo Lindqvist lives in Bergen near the fish market",
)
START_SECONDS = 180.0  # a loaded 2-core machine takes long to start two workers
# Node A's workers. uvicorn's supervisor kills a worker that does not answer its health check
# within 5 s, and on a machine loaded well past its cores a starting worker can miss it again
# and again: LETHE_TEST_RESIDUE_WORKERS=1 runs node A with one (the figures then say so).
NODE_A_WORKERS = int(os.environ.get("LETHE_TEST_RESIDUE_WORKERS", "2"))
SERVER_ENV = {
    "LETHE_RATE_LIMIT": "100000/minute",
    "LETHE_AUTH_FAILURE_RATE_LIMIT": "100000/minute",
    "LETHE_ERASURE_INTERVAL_SECONDS": "0.5",
}


@dataclass
class Deployment:
    backend: str
    root: Path
    env: dict[str, str]
    node_a: Server
    node_b: Server
    tokens: dict[str, str]
    ids: dict[str, str] = field(default_factory=dict)  # fact -> memory id (and "summary", "langgraph")
    other_ids: list[str] = field(default_factory=list)
    manifest: Path | None = None
    pg_urls: list[str] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return Path(self.env["LETHE_DATA_DIR"])

    def http(self, node: Server, role: str = "agent") -> httpx.Client:
        return httpx.Client(
            base_url=node.url, timeout=60, headers={"Authorization": f"Bearer {self.tokens[role]}"}
        )

    def store(self, node: Server) -> LetheStore:
        return LetheStore(
            LetheClient(node.url, self.tokens["agent"], timeout=60),
            purpose="support",
            agent_id="a1",
            id_key=ID_KEY,
            source_type="user_statement",
        )

    def stop(self) -> None:
        for node in (self.node_b, self.node_a):
            node.stop()


def _serve(root: Path, env: dict[str, str], workers: int) -> Server:
    """``lethe serve`` on the initialised store, its output in ``root``; not yet healthy."""
    root.mkdir(parents=True)
    port = free_port()
    out, err = root / "stdout.log", root / "stderr.log"
    full = lethe_env(Path(env["LETHE_DATA_DIR"]), **env)
    args = ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen([*lethe_command(), *args], env=full, stdout=o, stderr=e)
    return Server(f"http://127.0.0.1:{port}", full, proc, out, err)


def _healthy(server: Server, timeout: float = START_SECONDS) -> None:
    """Every worker up: a loaded machine can take a while to import the app in each."""
    deadline = time.monotonic() + timeout
    while True:
        assert server.proc.poll() is None, f"lethe serve exited: {server.err.read_text()[-2000:]}"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.url}/readyz", timeout=2).status_code == 200:
                return
        assert time.monotonic() < deadline, f"lethe serve not ready: {server.err.read_text()[-2000:]}"
        time.sleep(0.2)


def _token_of_first_run(*nodes: Server) -> str:
    """The admin token the first node to start minted: its 0600 file in that node's data dir
    (written once, on the store's first run; never printed)."""
    files = {Path(n.env["LETHE_DATA_DIR"]) / ADMIN_TOKEN_FILE for n in nodes}
    written = [f for f in files if f.exists()]
    assert len(written) == 1, "exactly one first admin token is written"
    return written[0].read_text().strip()


def _mint(url: str, admin: str) -> dict[str, str]:
    specs = {
        "agent": {"role": "agent", "agent_id": "a1", "purposes": ["support"]},
        "reviewer": {"role": "reviewer"},
        "privacy_officer": {"role": "privacy_officer"},
        "auditor": {"role": "auditor"},
    }
    tokens = {"admin": admin}
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {admin}"}) as http:
        for name, body in specs.items():
            r = http.post("/v1/admin/tokens", json=body)
            assert r.status_code == 201, r.text
            tokens[name] = r.json()["token"]
    return tokens


def start(backend: str, root: Path, pg_url: str | None) -> Deployment:
    """Node A (two workers, hybrid recall) and node B (a second process on the same store,
    lexical recall only: it embeds nothing)."""
    env = {**SERVER_ENV, "LETHE_DATA_DIR": str(root / "store")}
    if pg_url is not None:
        env["LETHE_DATABASE_URL"] = pg_url
    init = subprocess.run(
        [*lethe_command(), "init"], env=lethe_env(root / "store", **env), capture_output=True, text=True
    )
    assert init.returncode == 0, init.stderr
    with ThreadPoolExecutor(2) as pool:  # both start at once: a start takes seconds
        a, b = (
            pool.submit(_serve, root / "a", env, NODE_A_WORKERS),
            pool.submit(_serve, root / "b", {**env, "LETHE_EMBEDDING_MODEL": "none"}, 1),
        )
        node_a, node_b = a.result(), b.result()
    try:
        _healthy(node_a), _healthy(node_b)
        tokens = _mint(node_a.url, _token_of_first_run(node_a, node_b))
    except BaseException:  # no server outlives a deployment that never started
        node_a.stop(), node_b.stop()
        raise
    return Deployment(backend, root, node_a.env, node_a, node_b, tokens, pg_urls=[pg_url] if pg_url else [])


def _body(content: str, subject: str, kind: str, source: str, **prov: Any) -> dict[str, Any]:
    ref = SOURCE_REF if subject == SUBJECT else "crm-note-bo-1203"
    provenance = {"source_type": source, "source_ref": ref, **prov}
    if source == "web_page":
        provenance["url"] = URL
    return {
        "subject_id": subject,
        "purpose": "support",
        "kind": kind,
        "content": content,
        "provenance": provenance,
        "confidence": 0.9,
        "idempotency_key": uuid.uuid4().hex,
    }


def seed(d: Deployment) -> None:
    """The subject's facts (a web page's promoted by a reviewer), a LangGraph item, the other
    subject's own memories and his summary built on the subject's facts (promoted)."""
    with d.http(d.node_a) as a, d.http(d.node_a, "reviewer") as rv:
        for other in OTHERS:
            r = a.post("/v1/memories", json=_body(other, OTHER, "fact", "user_statement"))
            assert r.status_code == 201, r.text
            d.other_ids.append(r.json()["id"])
        for fact, (kind, content, source) in FACTS.items():
            r = a.post("/v1/memories", json=_body(content, SUBJECT, kind, source, turn="turn-7"))
            assert r.status_code == 201, r.text
            item = r.json()
            if item["status"] == "quarantined":
                p = rv.post(f"/v1/memories/{item['id']}/promote", json={"expected_version": item["version"]})
                assert p.status_code == 200, p.text
            d.ids[fact] = item["id"]
        sources = [d.ids[f] for f in ("tea", "home", "allergy")]
        body = _body(SUMMARY, OTHER, "fact", "summary")
        body["provenance"]["sources"] = sources
        r = a.post("/v1/memories", json=body)
        assert r.status_code == 201, r.text
        item = r.json()
        if item["status"] != "active":
            p = rv.post(f"/v1/memories/{item['id']}/promote", json={"expected_version": item["version"]})
            assert p.status_code == 200, p.text
        d.ids["summary"] = item["id"]
    store = d.store(d.node_a)
    store.put((SUBJECT, "preference"), LANGGRAPH_KEY, {"text": f"{NAME} asks for an aisle seat on trains"})
    got = store.get((SUBJECT, "preference"), LANGGRAPH_KEY)
    assert got is not None
    d.ids["langgraph"] = _langgraph_id(d)


def _langgraph_id(d: Deployment) -> str:
    import lethe.integrations.langgraph.mapping as m

    return m.memory_id(ID_KEY.encode(), "a1", "support", m.Place(SUBJECT, "preference"), LANGGRAPH_KEY)


def back_up(d: Deployment) -> None:
    """``lethe backup create`` on the live store, while both nodes serve."""
    r = d.node_a.cli("backup", "create", "--to", str(d.root / "backups"))
    assert r.returncode == 0, r.stderr
    d.manifest = next((d.root / "backups").glob("*/manifest.json"))


def forget(d: Deployment) -> dict[str, Any]:
    """File the erasure on node A and wait for its certificate; the certificate says erased."""
    with d.http(d.node_a, "privacy_officer") as po:
        r = po.post("/v1/erasure-requests", json={"subject_id": SUBJECT, "legal_basis": "gdpr-art17-1b"})
        assert r.status_code == 202, r.text
        job_url = f"/v1/erasure-requests/{r.json()['id']}"
        deadline = time.monotonic() + 120
        while (job := po.get(job_url).json())["status"] != "reported":
            assert time.monotonic() < deadline, job
            time.sleep(0.2)
        report = po.get(f"/v1/erasure-reports/{job['report_id']}")
        assert report.status_code == 200, report.text
        assert report.json()["result"] == "erased", report.json()["result"]
        return job


# -- A backup restored into a deployment of its own ---------------------------------------------


def _copy_keys(src: Path, dst: Path) -> None:
    """The key directory as an operator copies it: the SQLite keystore through SQLite's backup
    API (a running server holds it open), the rest as files."""
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.name.endswith((".sqlite3-wal", ".sqlite3-shm")):
            continue
        if f.suffix == ".sqlite3":
            s, t = sqlite3.connect(f), sqlite3.connect(dst / f.name)
            try:
                s.backup(t)
            finally:
                t.close()
                s.close()
        elif f.is_file():
            shutil.copy2(f, dst / f.name)


@contextmanager
def restored(d: Deployment, label: str, pg_url: str | None) -> Iterator[TestClient]:
    """The backup taken before the forget, restored with ``lethe backup restore`` into a new
    store holding a copy of the deployment's keys as they are now; served in process."""
    assert d.manifest is not None
    data = d.root / f"restored-{label}"
    _copy_keys(d.data_dir / "keys", data / "keys")
    env = {**d.env, "LETHE_DATA_DIR": str(data)}
    if pg_url is not None:
        env["LETHE_DATABASE_URL"] = pg_url
    for args in (["init"], ["backup", "restore", str(d.manifest)]):
        r = subprocess.run([*lethe_command(), *args], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    settings = Settings(
        data_dir=data,
        database_url=pg_url,
        rate_limit="100000/minute",
        auth_failure_rate_limit="100000/minute",
        sweep_interval_seconds=3600.0,
        erasure_interval_seconds=3600.0,
    )
    with TestClient(create_app(settings)) as client:
        yield client
