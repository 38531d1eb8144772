"""Figure 1, ``write_throughput``: governed encrypted writes against plain inserts.

``MemoryService.write`` (one durable transaction each, the run's KMS) against plain
SQLAlchemy Core inserts of the same rows (same columns and sizes, plaintext content) into
an equivalent table at the same durability, one transaction per insert. A second baseline
(``same_rows``) writes every row a governed write added, to all seven tables, plainly: its
ratio separates governance from the storage it needs through SQLAlchemy. A third writes the
same rows again at the driver, with no SQLAlchemy per statement: about as fast as those rows
can be stored from Python, so its rate over the plain insert's is about the highest ratio
these tables allow a Python implementation. The four alternate in rounds so that drift on
the machine hits them alike. Ratios ours/baseline.

Figure 1 runs on SQLite; figure 1b, ``write_throughput_postgres``, the same on a fresh
PostgreSQL database (both tables in it, the server's default durability: every commit
waits for its WAL flush), skipped where no PostgreSQL server answers.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from lethe.api.bench.baselines import plain_memories_table, plain_sqlite_engine
from lethe.api.bench.context import RunContext, store_settings
from lethe.api.bench.postgres import NoPostgres, fresh_database
from lethe.api.bench.same_rows import Rows, SameRows, rows_written
from lethe.api.bench.scales import TARGETS
from lethe.api.bench.stats import percentiles, rate, ratio
from lethe.api.bench.workload import agent_caller, warm_subjects, write_command
from lethe.api.bootstrap import Container, build
from lethe.keys.envelope import content_commitment
from lethe.vault.custody.sealing import seal
from lethe.vault.model import Caller, WriteCommand
from lethe.vault.store.db import is_sqlite
from lethe.vault.store.tables import memories

TENANT = "bench-writes"
DRIVER_SCHEMA = "plain_driver"  # PostgreSQL: the copies the same rows go to at the driver


def measure(ctx: RunContext) -> dict[str, Any]:
    """Figure 1: on SQLite, baseline in its own SQLite file at Lethe's pragmas."""
    c = ctx.build("writes")
    folder = ctx.root / "writes"
    base = plain_sqlite_engine(folder / "baseline.sqlite3")
    return _measure(ctx, c, base, SameRows(plain_sqlite_engine(folder / "driver.sqlite3")))


def measure_postgres(ctx: RunContext) -> dict[str, Any]:
    """Figure 1b: on PostgreSQL, Lethe's tables and the baseline's in one fresh database."""
    try:
        with fresh_database() as database_url:
            spec = {**ctx.spec("writes-postgres"), "database_url": database_url}
            c = build(store_settings(spec), create=True)
            base = sa.create_engine(database_url)
            return _measure(ctx, c, base, SameRows(base, schema=DRIVER_SCHEMA))
    except NoPostgres as exc:
        return {"skipped": str(exc)}


def _measure(ctx: RunContext, c: Container, base_engine: sa.Engine, driver: SameRows) -> dict[str, Any]:
    """Time the writes and the inserts, then split a write's cost into key lookup and crypto.
    ``driver``: the copies the same rows go to at the driver (they cannot share ``same_rows``')."""
    try:
        caller = agent_caller(TENANT)
        rng = random.Random(11)
        subjects = warm_subjects(c.memories, caller, rng)  # first write creates the key: not timed
        md = sa.MetaData()
        plain = plain_memories_table(md)
        md.create_all(base_engine)
        parties = _Parties(c, base_engine, plain, SameRows(base_engine), driver, caller, subjects, rng)
        ours, base, same_s, driver_s, cmds = _interleaved(ctx, parties)
        with c.uow.acting_for(TENANT), c.uow.read() as conn:
            sizes = conn.execute(
                sa.select(
                    sa.func.avg(sa.func.length(memories.c.ciphertext)),
                    sa.func.avg(sa.func.length(memories.c.provenance)),
                ).where(memories.c.tenant_id == TENANT)
            ).one()
        key_us, crypto_us = _cost_of_a_write(c, caller, subjects[0], cmds)
        log = _log_per_commit(parties)
    finally:
        base_engine.dispose()
        driver.engine.dispose()
        c.close()
    ours_rate, base_rate, same_rate, driver_rate = rate(ours), rate(base), rate(same_s), rate(driver_s)
    r = ratio(ours_rate, base_rate)
    mean_write_us = sum(ours) / len(ours) * 1e6
    return {
        "writes": len(ours),
        "subjects": len(subjects),
        "rounds": ctx.scale.write_rounds,
        "ours_per_s": round(ours_rate, 1),
        "baseline_per_s": round(base_rate, 1),
        "ratio": r,
        "target": TARGETS["write_throughput"],
        "met": r >= 0.5,
        "ours_latency": percentiles(ours),
        "baseline_latency": percentiles(base),
        "same_rows_per_s": round(same_rate, 1),
        "same_rows_ratio": ratio(ours_rate, same_rate),
        "same_rows_latency": percentiles(same_s),
        "driver_rows_per_s": round(driver_rate, 1),
        "driver_rows_ratio": ratio(ours_rate, driver_rate),
        "driver_rows_latency": percentiles(driver_s),
        "driver_over_plain": ratio(driver_rate, base_rate),  # about the highest these rows allow from Python
        "mean_ciphertext_bytes": round(float(sizes[0] or 0), 1),
        "mean_provenance_bytes": round(float(sizes[1] or 0), 1),
        "key_lookup_us_per_write": round(key_us, 1),
        "encryption_us_per_write": round(crypto_us, 1),
        "encryption_share_of_write": round(crypto_us / mean_write_us, 4),
        **log,
    }


@dataclass(frozen=True)
class _Parties:
    """Who writes in figure 1: Lethe's store and its caller, and the two baselines."""

    c: Container
    base_engine: sa.Engine  # the plain insert's database and the same rows' (PostgreSQL: schema ``plain``)
    plain: sa.Table  # the plain insert's table, created in it
    same: SameRows
    driver: SameRows  # the same rows again, sent at the driver
    caller: Caller
    subjects: list[str]
    rng: random.Random


def _interleaved(
    ctx: RunContext, p: _Parties
) -> tuple[list[float], list[float], list[float], list[float], list[WriteCommand]]:
    """Per round: Lethe's writes, then the same rows (plaintext) inserted into the baseline,
    then every row the writes added written plainly (``same_rows``), through SQLAlchemy Core
    and at the driver; seconds of each."""
    c, caller, subjects, rng = p.c, p.caller, p.subjects, p.rng
    s = ctx.scale
    ours: list[float] = []
    base: list[float] = []
    same_s: list[float] = []
    driver_s: list[float] = []
    cmds: list[WriteCommand] = []
    per_round = math.ceil(s.writes / s.write_rounds)
    for r in range(s.write_rounds):
        written: dict[str, str] = {}
        for i in range(per_round):
            cmd = write_command(rng, subjects[i % len(subjects)], f"w/{r}/{i}")
            cmds.append(cmd)
            t = time.perf_counter()
            out = c.memories.write(caller, cmd)
            ours.append(time.perf_counter() - t)
            written[out.item.id] = cmd.content
        plain, per_write = _read_back(p, written)
        base += _insert_plain(p, plain)
        same_s += p.same.write_all(per_write)
        driver_s += p.driver.write_all_at_driver(per_write)
    return ours, base, same_s, driver_s, cmds


def _read_back(p: _Parties, written: dict[str, str]) -> tuple[list[dict[str, Any]], list[Rows]]:
    """What the baselines write for these memories (id -> content), read once: all of each
    write's rows, and from them each memory's row with the plaintext in place of the ciphertext."""
    with p.c.uow.acting_for(p.caller.tenant_id), p.c.uow.read() as conn:  # behind PostgreSQL's wall
        per_write = rows_written(conn, p.caller.tenant_id, list(written))
    plain = []
    for rows in per_write:
        (memory,) = dict(rows)[memories]  # the same-rows baseline writes it as stored: a copy here
        m = {k: v for k, v in memory.items() if k != "ciphertext"}
        m["content"] = written[m["id"]]
        plain.append(m)
    return plain, per_write


def _insert_plain(p: _Parties, rows: list[dict[str, Any]]) -> list[float]:
    """The first baseline: each row inserted in a transaction of its own; the seconds of each."""
    seconds = []
    for m in rows:
        t = time.perf_counter()
        with p.base_engine.begin() as conn:
            conn.execute(p.plain.insert(), m)
        seconds.append(time.perf_counter() - t)
    return seconds


LOG_SAMPLE = 16  # commits whose log volume is counted (SQLite: well under an auto-checkpoint's 1,000 pages)


def _log_per_commit(p: _Parties) -> dict[str, Any]:
    """What one commit writes to the database's log: Lethe's write, the plain insert of its
    memory row, and the plain writes of all its rows (``same_rows``).

    A commit waits for its log to reach the disk, so the log volume sets a floor under a
    write that no CPU saving removes. SQLite: pages appended to the WAL (each a whole page);
    PostgreSQL: bytes of WAL. Counted over ``LOG_SAMPLE`` more writes and their plain rows.
    """
    c, caller, subjects, rng = p.c, p.caller, p.subjects, p.rng
    written: dict[str, str] = {}

    def write() -> None:
        for i in range(LOG_SAMPLE):
            cmd = write_command(rng, subjects[i % len(subjects)], f"log/{i}")
            written[c.memories.write(caller, cmd).item.id] = cmd.content

    ours = _logged(c.uow.engine, write)
    plain, per_write = _read_back(p, written)
    base = _logged(p.base_engine, lambda: _insert_plain(p, plain))
    all_rows = _logged(p.base_engine, lambda: p.same.write_all(per_write))
    unit = "wal_pages" if is_sqlite(p.base_engine) else "wal_bytes"
    return {
        "log_unit": unit,
        f"{unit}_per_write": round(ours / LOG_SAMPLE, 1),
        f"{unit}_per_plain_insert": round(base / LOG_SAMPLE, 1),
        f"{unit}_per_same_rows": round(all_rows / LOG_SAMPLE, 1),
    }


def _logged(engine: sa.Engine, body: Callable[[], object]) -> int:
    """What ``body`` appends to the log: SQLite WAL pages (from a truncated WAL, through SQL:
    never the live file) or PostgreSQL WAL bytes (the server's whole WAL: run alone)."""
    if is_sqlite(engine):
        _sqlite_pragma(engine, "PRAGMA wal_checkpoint(TRUNCATE)")
        body()
        return _sqlite_pragma(engine, "PRAGMA wal_checkpoint(PASSIVE)")[1]  # (busy, log, done)
    position = sa.text("SELECT pg_current_wal_insert_lsn()")
    with engine.connect() as conn:
        start = conn.execute(position).scalar_one()
        conn.rollback()  # no transaction held open while the body writes
        body()
        end = conn.execute(position).scalar_one()
        diff = conn.execute(sa.text("SELECT pg_wal_lsn_diff(:e, :s)"), {"e": end, "s": start}).scalar_one()
        return int(diff)


def _sqlite_pragma(engine: sa.Engine, sql: str) -> tuple[int, ...]:
    """A checkpoint pragma on a pooled connection outside any transaction (as ``reclaim_space``)."""
    raw = engine.raw_connection()
    try:
        driver = raw.driver_connection
        assert driver is not None, "a connection just checked out has its driver connection"
        return tuple(driver.execute(sql).fetchone())
    finally:
        raw.close()


def _cost_of_a_write(
    c: Container, caller: Caller, subject: str, cmds: list[WriteCommand]
) -> tuple[float, float]:
    """Where the time of a write goes: µs of key lookup, and of the encryption itself."""
    ref = c.pseudonyms.subject_ref(caller.tenant_id, subject)
    t = time.perf_counter()
    for _ in range(len(cmds)):
        key = c.keyring.key_for_write(caller.tenant_id, ref, cached=True)  # as a write takes it
    key_us = (time.perf_counter() - t) / len(cmds) * 1e6
    t = time.perf_counter()
    for i, cmd in enumerate(cmds):
        seal(key.data_key, caller.tenant_id, ref, str(i), 1, cmd.subject_id, cmd.content)
        content_commitment(key.data_key, cmd.content.encode())
    crypto_us = (time.perf_counter() - t) / len(cmds) * 1e6
    return key_us, crypto_us
