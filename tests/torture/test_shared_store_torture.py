"""Torture: one ``lethe serve`` shares its store with agents, officers and operators at once.

Each round, in parallel: agents write over HTTP (new subjects and known ones), a privacy
officer forgets one subject over HTTP, and an operator runs ``lethe forget`` (another
subject), ``compact``, ``audit checkpoint``, ``backup create`` and ``erasure list`` on the
same data dir. After every round the store must be sound and must have kept its word:
every SQLite file passes ``PRAGMA integrity_check`` (read by another process, never by
this one), ``lethe audit verify`` and ``lethe replay --check`` pass, every acknowledged
write of a subject not forgotten reads back unchanged, and every forgotten subject's
memories read 404 while its keys are gone from the KMS. On SQLite and on PostgreSQL
(the local KMS's keystore is SQLite on both). Its counts (rounds, writes acknowledged,
checks passed) are printed in the run's closing summary (``tests.tallies``).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock

import pytest

from tests.api.test_serve import Server
from tests.tallies import report_at_end
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

ROUNDS = 20
WRITERS = 2  # HTTP writer threads per round
WRITES_PER_WRITER = 3  # per round: one to a new subject, the rest to known live subjects
FIRST_SUBJECTS = 4
TENANT = "acme"
SERVER_ENV = {
    "LETHE_RATE_LIMIT": "1000000/minute",  # the checks read everything back every round
    "LETHE_ERASURE_INTERVAL_SECONDS": "0.2",
}


@dataclass
class Tally:
    rounds: int = 0
    writes_acknowledged: int = 0
    erasures: int = 0
    cli_commands: int = 0
    checks_passed: int = 0

    def __str__(self) -> str:
        return (
            f"{self.rounds} rounds, {self.writes_acknowledged} writes acknowledged, "
            f"{self.erasures} erasures, {self.cli_commands} CLI commands run, "
            f"{self.checks_passed} checks passed"
        )


@dataclass
class Ledger:
    """What the store has promised: acknowledged writes, live and forgotten subjects."""

    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    written: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # subject -> (id, content)
    live: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    subjects_made: int = 0
    lock: Lock = field(default_factory=Lock)

    def new_subject(self) -> str:
        with self.lock:
            self.subjects_made += 1
            return f"subject-{self.subjects_made}-{self.run}@example.com"

    def acknowledge(self, subject: str, memory_id: str, content: str) -> None:
        with self.lock:
            if subject not in self.written:
                self.written[subject] = []
                self.live.append(subject)
            self.written[subject].append((memory_id, content))

    def some_live(self, k: int) -> list[str]:
        with self.lock:
            return random.sample(self.live, min(k, len(self.live)))

    def take_for_erasure(self) -> str:
        with self.lock:
            subject = self.live.pop(random.randrange(len(self.live)))
            self.forgotten.append(subject)
            return subject


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    env = dict(SERVER_ENV)
    pg_url = None
    if request.param == "postgres":
        pg = request.getfixturevalue("postgres")
        env["LETHE_DATABASE_URL"] = pg_url = pg.create()
    try:
        srv = serve(tmp_path / "server", tmp_path / "data", env)
        try:
            yield srv
        finally:
            srv.stop()
    finally:
        if pg_url is not None:
            pg.drop(pg_url)


def write_some(
    log: HttpLog, server: Server, token: str, ledger: Ledger, tally: Tally, claims: Claims
) -> None:
    """One writer thread's share of a round: a new subject first, then known live ones."""
    subjects = [ledger.new_subject(), *ledger.some_live(WRITES_PER_WRITER - 1)]
    with log.client(server.url, token) as agent:
        for subject in subjects:
            content = f"{subject} says {uuid.uuid4().hex}"
            r = write(agent, subject, content)
            memory_id = acknowledged_id(r)
            if claims.check(memory_id is not None, f"a write for live {subject} is acknowledged", r.text):
                ledger.acknowledge(subject, memory_id, content)
                with ledger.lock:
                    tally.writes_acknowledged += 1


def play_round(
    n: int, server: Server, log: HttpLog, tokens: dict[str, str], ledger: Ledger, tally: Tally, claims: Claims
) -> None:
    """Writers, an HTTP erasure and the operator's CLI commands, all at once; then the jobs finish."""
    over_http, by_cli = ledger.take_for_erasure(), ledger.take_for_erasure()
    reference = f"DSR-cli-{ledger.run}-{n}"
    commands = [
        forget_args(TENANT, by_cli, reference),
        ("compact",),
        ("audit", "checkpoint"),
        ("backup", "create"),
        ("erasure", "list", "--tenant", TENANT),
    ]
    with (
        log.client(server.url, tokens["officer"]) as officer,
        ThreadPoolExecutor(max_workers=WRITERS + 1 + len(commands)) as pool,
    ):
        writers = [
            pool.submit(write_some, log, server, tokens["agent"], ledger, tally, claims)
            for _ in range(WRITERS)
        ]
        http_job = pool.submit(request_erasure, officer, over_http)
        runs = [pool.submit(cli, server.env, *args) for args in commands]
        for w in writers:
            w.result()
        for args, run in zip(commands, runs, strict=True):
            claims.cli(run.result(), FORGET_ACCEPTED if args[0] == "forget" else (0,))
        tally.cli_commands += len(commands)

        listing = officer.get("/v1/erasure-requests")
        jobs = listing.json().get("items", []) if listing.status_code == 200 else []
        cli_jobs = [j["id"] for j in jobs if j.get("reference") == reference]
        claims.check(
            len(cli_jobs) == 1, "the erasure requested by `lethe forget` is listed", listing.text[:500]
        )
        for job_id in [http_job.result(), *cli_jobs]:
            job = wait_until_reported(officer, job_id)
            claims.check(job.get("status") == "reported", "every erasure is reported", job)
        tally.erasures += 2


def check_round(server: Server, log: HttpLog, tokens: dict[str, str], ledger: Ledger, claims: Claims) -> None:
    """The store is sound and kept its word: nothing lost, nothing forgotten came back."""
    data = Path(server.env["LETHE_DATA_DIR"])
    with ThreadPoolExecutor(max_workers=5) as pool:  # other processes check while we read over HTTP
        integrity = pool.submit(integrity_problems, data)
        audit = pool.submit(cli, server.env, "audit", "verify")
        replay = pool.submit(cli, server.env, "replay", "--check")
        keys_by_memory = pool.submit(subject_keys_by_memory, server.env)
        held = pool.submit(keystore_key_names, data)
        read_everything_back(server, log, tokens, ledger, claims)
    claims.check(
        not integrity.result(), "PRAGMA integrity_check is ok for every SQLite file", integrity.result()
    )
    claims.cli(audit.result())
    claims.cli(replay.result())
    for subject in ledger.forgotten:
        keys = keys_of(keys_by_memory.result(), (memory_id for memory_id, _ in ledger.written[subject]))
        claims.check(bool(keys), f"the data DB records {subject}'s keys", keys)
        claims.check(set(keys.values()) <= {"destroyed"}, f"the data DB has {subject}'s keys destroyed", keys)
        resurrected = held.result() & keys.keys()
        claims.check(not resurrected, f"{subject}'s key is gone from the keystore", resurrected)
    claims.check(not log.server_errors(), "no HTTP response was a 5xx", log.server_errors())


def read_everything_back(
    server: Server, log: HttpLog, tokens: dict[str, str], ledger: Ledger, claims: Claims
) -> None:
    """Every acknowledged write of a live subject reads back unchanged; a forgotten one's reads 404."""
    with log.client(server.url, tokens["agent"]) as agent:
        for subject in ledger.live:
            for memory_id, content in ledger.written[subject]:
                r = agent.get(f"/v1/memories/{memory_id}")
                claims.check(
                    r.status_code == 200 and r.json()["content"] == content,
                    f"an acknowledged write of live {subject} reads back unchanged",
                    f"{memory_id}: {r.status_code} {r.text[:200]}",
                )
        for subject in ledger.forgotten:
            for memory_id, _ in ledger.written[subject]:
                r = agent.get(f"/v1/memories/{memory_id}")
                claims.check(
                    r.status_code == 404,
                    f"a memory of forgotten {subject} reads 404",
                    f"{memory_id}: {r.text}",
                )


def test_writers_erasures_and_cli_commands_beside_a_server_never_corrupt_lose_or_resurrect(
    server: Server, pytestconfig: pytest.Config
) -> None:
    log, ledger, tally = HttpLog(), Ledger(), Tally()
    engine = server.env.get("LETHE_DATABASE_URL", "sqlite").split(":")[0]
    try:
        _torture(server, log, ledger, tally)
    finally:  # the counts reach CI's log whether the run passed or failed part way
        report_at_end(pytestconfig, f"torture on {engine}: {tally}")


def _torture(server: Server, log: HttpLog, ledger: Ledger, tally: Tally) -> None:
    tokens = {
        "agent": server.mint("--tenant", TENANT, *AGENT)["token"],
        "officer": server.mint("--tenant", TENANT, "--role", "privacy_officer")["token"],
    }
    claims = Claims()
    with log.client(server.url, tokens["agent"]) as agent:
        for _ in range(FIRST_SUBJECTS):
            subject = ledger.new_subject()
            r = write(agent, subject, f"{subject} first words")
            assert r.status_code == 201, r.text
            ledger.acknowledge(subject, r.json()["id"], f"{subject} first words")
            tally.writes_acknowledged += 1

    for n in range(1, ROUNDS + 1):
        play_round(n, server, log, tokens, ledger, tally, claims)
        check_round(server, log, tokens, ledger, claims)
        tally.rounds, tally.checks_passed = n, claims.passed
        claims.assert_all_hold(f"round {n} of {ROUNDS} ({tally})")
