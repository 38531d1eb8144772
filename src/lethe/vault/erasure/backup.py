"""Backups of the data store that can never bring a forgotten subject back.

A backup is a consistent online snapshot of the database only (SQLite's backup API, or
``pg_dump`` for PostgreSQL) plus a manifest (time, tree size, latest checkpoint, file
digest). Key material lives in the key directory or the KMS and is never in a backup,
so a snapshot taken before a forget holds ciphertext under a key that is destroyed.

Restore loads the snapshot, then re-applies the ledger of forgotten subjects: the
subjects forgotten in the store being replaced, and every subject whose key the KMS
reports destroyed (the KMS is the ledger that survives losing the database). They are
tombstoned and fenced again, and the summaries derived from them tombstoned again,
before anyone can read. The ledger of retractions of the store being replaced is
re-applied the same way, in the same transaction (``memory.retraction_ledger``).

The officer's records outlive the restore (``erasure.restore_records``): erasure requests,
their steps and certificates, legal holds and earlier forks of the replaced store are
written back into the restored one. The events logged after the snapshot are abandoned,
so the audit log forks there; the fork is recorded (``audit.forks``) with the abandoned
branch's signed checkpoints and the erasures re-applied on the new branch.

Exceptions: ``BackupError`` (422; the snapshot or restore could not be made: missing
``pg_dump``, unreadable manifest, digest mismatch, the KMS unreachable during a restore),
``StoreUnavailable`` (503).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from lethe.keys.envelope import create_private_file
from lethe.keys.protocol import KeyDestroyed, KmsError
from lethe.vault.audit.forks import ReappliedErasure, record_fork
from lethe.vault.clock import iso, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.erasure.forgetting import purge_derived, tombstone_subject
from lethe.vault.erasure.restore_records import read_records, reimport, restart_unfinished
from lethe.vault.errors import BackupError
from lethe.vault.memory import repository as memory_repo
from lethe.vault.memory.retraction_ledger import read_ledger, reapply
from lethe.vault.store.db import UnitOfWork, is_sqlite
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.schema import upgrade
from lethe.vault.store.tables import backups, checkpoints, forgotten_subjects
from lethe.vault.store.tenancy import maintenance_job

FORMAT = "lethe-backup/v1"
BACKUP_CREATED, BACKUP_RESTORED = "backup.created", "backup.restored"


@dataclass(frozen=True)
class BackupManifest:
    format: str
    id: str
    created_at: str
    database: str
    file: str
    sha256: str
    tree_size: int
    checkpoint: str | None
    contains_key_material: bool = False

    @classmethod
    def load(cls, path: Path) -> BackupManifest:
        try:
            doc = json.loads(Path(path).read_text())
            if doc.get("format") != FORMAT:
                raise BackupError(f"not a {FORMAT} manifest")
            return cls(**doc)
        except (OSError, ValueError, TypeError) as exc:
            raise BackupError(f"cannot read backup manifest {path}") from exc


@dataclass(frozen=True)
class RestoreReport:
    backup_id: str
    tree_size_restored: int
    reforgotten: int
    keys_found_destroyed: int
    derived_retombstoned: int = 0
    retractions_reapplied: int = 0
    records_kept: dict[str, int] = field(default_factory=dict)  # rows written back, by table
    reapplied_requests: list[str] = field(default_factory=list)  # erasures re-applied to the snapshot
    fork_id: str | None = None  # the audit log's fork at the snapshot's tree size
    abandoned_tree_size: int | None = None
    requests_restarted: list[str] = field(default_factory=list)  # unfinished; their steps run again


def _sqlite_path(engine: Engine) -> Path:
    return Path(engine.url.database or "")


def _pg_env(engine: Engine) -> tuple[str, dict[str, str]]:
    url = engine.url
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    return url.set(drivername="postgresql", password=None).render_as_string(hide_password=False), env


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@maintenance_job("backup")
def create_backup(
    uow: UnitOfWork, dest_dir: Path, clock: Callable[[], datetime] = utcnow, *, log: EventLog
) -> Path:
    """Write a snapshot and its manifest under ``dest_dir``; return the manifest path."""
    backup_id, now = str(uuid.uuid4()), clock()
    folder = Path(dest_dir) / f"lethe-backup-{now.strftime('%Y%m%dT%H%M%SZ')}-{backup_id[:8]}"
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.mkdir(mode=0o700)
    engine = uow.engine
    if is_sqlite(engine):
        target = folder / "data.sqlite3"
        src, dst = sqlite3.connect(_sqlite_path(engine)), sqlite3.connect(target)
        try:
            src.backup(dst)  # a consistent online snapshot
            tree_size = dst.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
            row = dst.execute("SELECT note FROM checkpoints ORDER BY tree_size DESC LIMIT 1").fetchone()
        finally:
            dst.close()
            src.close()
        checkpoint = row[0] if row else None
        database = "sqlite"
    else:
        if shutil.which("pg_dump") is None:
            shutil.rmtree(folder)
            raise BackupError("pg_dump is not installed; install the PostgreSQL client tools to back up")
        with uow.read() as conn:
            tree_size = log.size(conn)
            checkpoint = conn.execute(
                sa.select(checkpoints.c.note).order_by(checkpoints.c.tree_size.desc()).limit(1)
            ).scalar_one_or_none()
        target = folder / "data.pgdump"
        dsn, env = _pg_env(engine)
        proc = subprocess.run(
            ["pg_dump", "--format=custom", "--no-owner", f"--file={target}", dsn],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            shutil.rmtree(folder)
            raise BackupError(f"pg_dump failed: {proc.stderr.strip()[:300]}")
        database = "postgresql"
    os.chmod(target, 0o600)
    manifest = BackupManifest(
        FORMAT, backup_id, iso(now), database, target.name, _sha256(target), tree_size, checkpoint
    )
    path = folder / "manifest.json"
    create_private_file(path)
    path.write_text(json.dumps(asdict(manifest), indent=2, sort_keys=True))
    with uow.write() as conn:
        conn.execute(
            backups.insert().values(
                id=backup_id, created_at=iso(now), tree_size=tree_size, location=str(folder)
            )
        )
        log.append(
            conn,
            Event(
                BACKUP_CREATED,
                "_system",
                {
                    "backup_id": backup_id,
                    "tree_size": tree_size,
                    "database": database,
                    "sha256": manifest.sha256,
                },
                occurred_at=iso(now),
            ),
        )
    return path


@maintenance_job("restore")
def restore_backup(
    uow: UnitOfWork,
    keyring: SubjectKeyring,
    manifest_path: Path,
    clock: Callable[[], datetime] = utcnow,
    *,
    log: EventLog,
) -> RestoreReport:
    """Replace the store with the snapshot, then forget again whoever was forgotten since, and
    retract again what was retracted since."""
    manifest = BackupManifest.load(manifest_path)
    source = Path(manifest_path).parent / manifest.file
    if not source.exists() or _sha256(source) != manifest.sha256:
        raise BackupError("backup file is missing or does not match its manifest digest")
    engine = uow.engine
    if (manifest.database == "sqlite") != is_sqlite(engine):
        raise BackupError(f"a {manifest.database} backup cannot be restored into this database")
    try:
        keyring.kms.health()
    except KmsError as exc:
        raise BackupError("the KMS must be reachable to restore safely; nothing was changed") from exc
    ledger = _live_ledger(uow)
    retracted = read_ledger(uow)
    records = read_records(uow)
    engine.dispose()
    if is_sqlite(engine):
        src, dst = sqlite3.connect(source), sqlite3.connect(_sqlite_path(engine))
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
    else:
        dsn, env = _pg_env(engine)
        proc = subprocess.run(
            [
                "pg_restore",
                "--clean",
                "--if-exists",
                "--no-owner",
                f"--dbname={dsn}",
                str(source),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise BackupError(f"pg_restore failed: {proc.stderr.strip()[:300]}")
    upgrade(engine)
    destroyed = _keys_destroyed_at_kms(uow, keyring)
    reforgotten = derived = 0
    reapplied: list[ReappliedErasure] = []
    now = clock()
    with uow.write() as conn:
        kept = reimport(conn, records) if records is not None else {}
        restarted = restart_unfinished(conn, log, records, manifest.tree_size) if records is not None else []
        # The live store's ledger keeps its request ids; keys the KMS reports destroyed fill in the rest.
        subjects = {k: "restore-ledger" for k in destroyed} | {(t, s): r for t, s, r in ledger}
        for (tenant_id, subject_ref), request_id in sorted(subjects.items()):
            # A snapshot taken between an erasure's acceptance (fence up) and its tombstone has both.
            if not keyring.is_fenced(conn, tenant_id, subject_ref) or memory_repo.has_unforgotten(
                conn, tenant_id, subject_ref
            ):
                tombstone_subject(conn, log, keyring, tenant_id, subject_ref, request_id or "restore-ledger")
                reforgotten += 1
                reapplied.append(ReappliedErasure(tenant_id, request_id or "restore-ledger"))
            # Summaries that cite the subject may predate the snapshot's own purge (or the forget).
            derived += len(purge_derived(conn, log, tenant_id, subject_ref, request_id, now).ids)
        retractions = reapply(conn, log, retracted, now)
        keyring.mark_destroyed(conn, _destroyed_names(destroyed), now)
        abandoned = records.tree_size if records is not None else manifest.tree_size
        forked = abandoned > manifest.tree_size
        ev = log.append(
            conn,
            Event(
                BACKUP_RESTORED,
                "_system",
                {
                    "backup_id": manifest.id,
                    "tree_size_restored": manifest.tree_size,
                    "reforgotten": reforgotten,
                    "derived_retombstoned": derived,
                    "retractions_reapplied": retractions,
                    "abandoned_tree_size": abandoned if forked else None,
                    "erasure_requests_kept": kept.get("erasure_jobs", 0),
                },
                occurred_at=iso(now),
            ),
        )
        fork = None
        if forked and records is not None:
            fork = record_fork(
                conn,
                backup_id=manifest.id,
                restored_at=iso(now),
                fork_tree_size=manifest.tree_size,
                abandoned_tree_size=abandoned,
                abandoned_checkpoints=[n for size, n in records.checkpoints if size > manifest.tree_size],
                reapplied=reapplied,
                event_seq=ev.seq,
            )
    return RestoreReport(
        manifest.id,
        manifest.tree_size,
        reforgotten,
        len(destroyed),
        derived,
        retractions,
        kept,
        [r.request_id for r in reapplied],
        fork.id if fork is not None else None,
        abandoned if forked else None,
        restarted,
    )


def _live_ledger(uow: UnitOfWork) -> set[tuple[str, str, str | None]]:
    """Subjects forgotten in the store about to be replaced (if it is still readable)."""
    try:
        with uow.read() as conn:
            rows = conn.execute(
                sa.select(
                    forgotten_subjects.c.tenant_id,
                    forgotten_subjects.c.subject_ref,
                    forgotten_subjects.c.request_id,
                )
            ).all()
    except Exception:
        return set()
    return {(r.tenant_id, r.subject_ref, r.request_id) for r in rows}


def _keys_destroyed_at_kms(uow: UnitOfWork, keyring: SubjectKeyring) -> dict[tuple[str, str], list[str]]:
    """Subjects whose key the restored store thinks live but the KMS says destroyed."""
    with uow.read() as conn:
        rows = keyring.active_keys(conn)
    found: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        try:
            keyring.kms.unwrap_data_key(r.key_name, r.wrapped_dek)
        except KeyDestroyed:
            found.setdefault((r.tenant_id, r.subject_ref), []).append(r.key_name)
        except KmsError as exc:
            # Still safe: a destroyed key stays destroyed; the fence is re-applied on the next restore.
            raise BackupError("the KMS failed during restore; run the restore again") from exc
    return found


def _destroyed_names(destroyed: dict[tuple[str, str], list[str]]) -> list[str]:
    return [n for names in destroyed.values() for n in names]
