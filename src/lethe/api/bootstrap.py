"""The composition root: settings -> engine -> unit of work -> KMS -> services.

Nothing is built at import time; every process (server, CLI command, test) calls
``build`` with its settings and closes what it gets.

Only ``build(settings, create=True)`` (``lethe init``) creates a store: the data dir,
the key files and the schema. Every other process opens an existing store and refuses,
naming the fix, when the data dir or a key file is missing or the schema is another
release's: a command run from the wrong folder must not quietly start a new store with
new keys, and a new pepper or master key beside existing data would make it unreachable.

Exceptions: ``StoreNotReady`` (the store cannot be opened as it is).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa

from lethe.api.settings import Settings
from lethe.api.signing_key import ensure_signing_key, load_signer, log_origin
from lethe.api.webhooks import build_webhooks
from lethe.keys.envelope import create_private_file, create_secret_file
from lethe.keys.factory import build_kms
from lethe.keys.protocol import KeyManager
from lethe.vault.access.sessions import ConsoleSessions
from lethe.vault.access.tokens import TokenService
from lethe.vault.audit.forks import AuditForks
from lethe.vault.audit.log import AuditLog
from lethe.vault.custody.keyring import DekCache, SubjectKeyring
from lethe.vault.custody.opened_vectors import OpenedVectors
from lethe.vault.custody.pseudonyms import Pseudonymizer, create_pepper
from lethe.vault.erasure.compaction import Compactor
from lethe.vault.erasure.deadline_service import ErasureDeadlines
from lethe.vault.erasure.legal_bases import LegalBases
from lethe.vault.erasure.pipeline import erasure_pipeline
from lethe.vault.erasure.service import ErasureService
from lethe.vault.errors import StoreNotReady
from lethe.vault.memory.agent_sessions import AgentSessions
from lethe.vault.memory.embedding import load_embedder
from lethe.vault.memory.own_records import OwnRecords
from lethe.vault.memory.reindex import Reindexer
from lethe.vault.memory.retention import RetentionService
from lethe.vault.memory.retraction import RetractionService
from lethe.vault.memory.review import ReviewService
from lethe.vault.memory.search import SearchService
from lethe.vault.memory.service import MemoryService
from lethe.vault.memory.vector_fill import VectorFill
from lethe.vault.memory.vectors import VectorIndex
from lethe.vault.oversight.certificate import ErasureReports, certificate_work
from lethe.vault.oversight.final_certificate import FinalCertificates
from lethe.vault.oversight.kpis import KpiService
from lethe.vault.store.db import UnitOfWork, make_engine
from lethe.vault.store.events import EventLog, SqlEventLog
from lethe.vault.store.readiness import holds_data
from lethe.vault.store.schema import require_current, schema_state, upgrade
from lethe.vault.subject_access.service import SubjectAccessService
from lethe.vault.webhooks.delivery import Dispatcher
from lethe.vault.webhooks.service import WebhookService


@dataclass
class Container:
    settings: Settings
    uow: UnitOfWork
    kms: KeyManager
    keyring: SubjectKeyring
    pseudonyms: Pseudonymizer
    log: EventLog
    memories: MemoryService
    search: SearchService
    review: ReviewService
    retractions: RetractionService
    retention: RetentionService
    erasure: ErasureService
    deadlines: ErasureDeadlines
    compactor: Compactor
    audit: AuditLog
    reports: ErasureReports
    forks: AuditForks
    tokens: TokenService
    subject_access: SubjectAccessService
    reindex: Reindexer
    vector_fill: VectorFill
    kpis: KpiService
    sessions: ConsoleSessions
    own_records: OwnRecords
    agent_sessions: AgentSessions  # agents' sessions and their taint (not the console's sign-ins)
    webhooks: WebhookService
    webhook_dispatch: Dispatcher | None  # None without the webhooks extra
    semantic: str = ""  # one line: which embedder ranks searches, or why search is lexical only
    created: list[str] = field(default_factory=list)

    def close(self) -> None:
        if self.webhook_dispatch is not None:
            self.webhook_dispatch.close()
        self.kms.close()
        self.uow.dispose()


PEPPER, SIGNING_KEY, MASTER_KEY = "pepper.key", "signing.pem", "master.key"


def initialise(settings: Settings) -> list[str]:
    """Create the data dir, key dir, pepper, signing key and (SQLite) database file; list them."""
    created = []
    for d in (settings.data_dir, settings.key_dir):
        if not d.exists():
            d.mkdir(parents=True, mode=0o700)
            created.append(f"directory {d}")
    if create_pepper(settings.key_dir / PEPPER):
        created.append(f"pseudonym pepper {settings.key_dir / PEPPER} (0600)")
    created += ensure_signing_key(settings)
    if settings.kms == "local" and create_secret_file(settings.key_dir / MASTER_KEY):
        created.append(f"local KMS master key {settings.key_dir / MASTER_KEY} (0600)")
    path = sqlite_path(settings)
    if path is not None and create_private_file(path):
        created.append(f"database {path} (0600)")
    return created


def sqlite_path(settings: Settings) -> Path | None:
    url = sa.engine.make_url(settings.db_url)
    return Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None


def require_initialised(settings: Settings) -> None:
    """The data dir and every key file must exist: never create them beside an existing store."""
    if not settings.data_dir.is_dir():
        raise StoreNotReady(
            f"no Lethe data dir at {settings.data_dir.resolve()}: set LETHE_DATA_DIR to the store's "
            "data dir, or run `lethe init` to create a new store there"
        )
    needed = [PEPPER, SIGNING_KEY] + ([MASTER_KEY] if settings.kms == "local" else [])
    missing = [name for name in needed if not (settings.key_dir / name).exists()]
    if missing:
        raise StoreNotReady(
            f"the key dir {settings.key_dir.resolve()} lacks {', '.join(missing)}: restore it from "
            "your key backup (new keys beside existing data would leave that data unreachable)"
        )
    path = sqlite_path(settings)
    if path is not None and not path.exists():
        raise StoreNotReady(f"no database at {path}: run `lethe init`, or check LETHE_DATA_DIR")


def _refuse_new_keys_for_old_data(settings: Settings, engine: sa.Engine) -> None:
    """``lethe init`` completes a new store; it never mints a pepper for a store with data."""
    path = sqlite_path(settings)
    if (settings.key_dir / PEPPER).exists() or (path is not None and not path.exists()):
        return
    if schema_state(engine).current is None:
        return
    with engine.connect() as conn:
        has_data = holds_data(conn)
    if has_data:
        raise StoreNotReady(
            f"{settings.key_dir / PEPPER} is missing but the database holds data: restore the key dir "
            "from your key backup; a new pepper would make every subject unreachable"
        )


def build(
    settings: Settings,
    *,
    create: bool = False,
    wrap_kms: Callable[[KeyManager], KeyManager] | None = None,
) -> Container:
    """Open the store (``create=True``: create what is missing first, and migrate to the latest).

    ``wrap_kms`` puts a proxy (the server's timing metrics) in front of the KMS before any
    service gets it, so every KMS call goes through it.
    """
    if create:
        engine = make_engine(settings.db_url)
        _refuse_new_keys_for_old_data(settings, engine)
        created = initialise(settings)
        upgrade(engine)
    else:
        require_initialised(settings)
        created = []
        engine = make_engine(settings.db_url)
        require_current(engine)
    uow = UnitOfWork(engine, row_security=settings.row_security)
    kms = build_kms(
        settings.kms,
        key_dir=settings.key_dir,
        vault_addr=settings.vault_addr,
        vault_token=settings.vault_token.get_secret_value() if settings.vault_token else None,
        vault_mount=settings.vault_transit_mount,
        timeout=settings.kms_timeout_seconds,
    )
    if wrap_kms is not None:
        kms = wrap_kms(kms)
    keyring = SubjectKeyring(
        kms,
        uow,
        DekCache(settings.dek_cache_entries, settings.dek_cache_ttl_seconds),
        OpenedVectors(settings.vector_cache_entries, settings.dek_cache_ttl_seconds),
    )
    pseudonyms = Pseudonymizer.from_file(settings.key_dir / PEPPER)
    limits = settings.limits()
    log = SqlEventLog()  # the one event log every command appends through
    compactor = Compactor(uow, retention=timedelta(days=settings.compaction_retention_days))
    signer = load_signer(settings)
    audit = AuditLog(uow, signer, log_origin(settings))
    reports = ErasureReports(audit, signer)
    semantic = load_embedder(settings.embedding_model)
    vectors = VectorIndex(semantic.embedder)
    agent_sessions = AgentSessions(uow, pseudonyms, timedelta(seconds=settings.session_ttl_seconds))
    webhooks, webhook_dispatch = build_webhooks(
        uow,
        pseudonyms,
        allow_private=settings.webhook_allow_private,
        retry_base_seconds=settings.webhook_retry_base_seconds,
        max_attempts=settings.webhook_max_attempts,
        timeout_seconds=settings.webhook_timeout_seconds,
    )
    return Container(
        settings=settings,
        uow=uow,
        kms=kms,
        keyring=keyring,
        pseudonyms=pseudonyms,
        log=log,
        memories=MemoryService(
            uow,
            keyring,
            pseudonyms,
            limits,
            log=log,
            vectors=vectors,
            data_policy=settings.built_data_policy(),
            session_ttl=agent_sessions.ttl,
        ),
        search=SearchService(uow, keyring, pseudonyms, vectors=vectors, sessions=agent_sessions),
        agent_sessions=agent_sessions,
        review=ReviewService(uow, keyring, log=log),
        retractions=RetractionService(uow, log=log, pseudonyms=pseudonyms),
        retention=RetentionService(uow, keyring, limits, log=log),
        erasure=ErasureService(
            uow,
            kms,
            keyring,
            pseudonyms,
            erasure_pipeline(
                compactor,
                certify=certificate_work(audit, signer, reports),
                after_run=[FinalCertificates(uow, kms, reports, log).run_due],
            ),
            log=log,
            legal_bases=LegalBases(settings.extra_legal_bases),
            kms_refusal_window=timedelta(seconds=settings.erasure_kms_refusal_window_seconds),
        ),
        deadlines=ErasureDeadlines(uow, log=log),
        compactor=compactor,
        audit=audit,
        reports=reports,
        forks=AuditForks(uow),
        tokens=TokenService(uow, log=log),
        subject_access=SubjectAccessService(uow, keyring, pseudonyms, signer, log_origin(settings), log=log),
        reindex=Reindexer(uow, keyring, pseudonyms, vectors=vectors),
        vector_fill=VectorFill(uow, keyring, vectors),
        kpis=KpiService(uow),
        semantic=semantic.status,
        sessions=ConsoleSessions(
            uow,
            idle=timedelta(seconds=settings.console_session_idle_seconds),
            max_age=timedelta(seconds=settings.console_session_max_seconds),
        ),
        own_records=OwnRecords(uow, keyring, pseudonyms),
        webhooks=webhooks,
        webhook_dispatch=webhook_dispatch,
        created=created,
    )
