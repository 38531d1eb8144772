"""The composition root: settings -> engine -> unit of work -> KMS -> services.

Nothing is built at import time; every process (server, CLI command, test) calls
``build`` with its settings and closes what it gets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from api.settings import Settings
from api.signing_key import ensure_signing_key, load_signer, log_origin
from keys.factory import build_kms
from keys.protocol import KeyManager
from vault.audit_log import AuditLog
from vault.certificate import ErasureReports, reported_step
from vault.compaction import Compactor, compacted_step
from vault.db import UnitOfWork, make_engine
from vault.erasure import ErasureService
from vault.keyring import DekCache, SubjectKeyring
from vault.memories import MemoryService
from vault.policy import Limits
from vault.pseudonyms import Pseudonymizer, create_pepper
from vault.schema import upgrade
from vault.search import SearchService


@dataclass
class Container:
    settings: Settings
    uow: UnitOfWork
    kms: KeyManager
    keyring: SubjectKeyring
    pseudonyms: Pseudonymizer
    memories: MemoryService
    search: SearchService
    erasure: ErasureService
    compactor: Compactor
    audit: AuditLog
    reports: ErasureReports
    created: list[str] = field(default_factory=list)

    def close(self) -> None:
        close = getattr(self.kms, "close", None)
        if close is not None:
            close()
        self.uow.engine.dispose()


def initialise(settings: Settings) -> list[str]:
    """Create the data dir, key dir, pepper and schema; list what was created."""
    created = []
    for d, mode in ((settings.data_dir, 0o700), (settings.key_dir, 0o700)):
        if not d.exists():
            d.mkdir(parents=True, mode=mode)
            created.append(f"directory {d}")
    if create_pepper(settings.key_dir / "pepper.key"):
        created.append(f"pseudonym pepper {settings.key_dir / 'pepper.key'} (0600)")
    created += ensure_signing_key(settings)
    return created


def build(settings: Settings, *, migrate: bool = True) -> Container:
    created = initialise(settings)
    engine = make_engine(settings.db_url)
    if migrate:
        upgrade(engine)
    uow = UnitOfWork(engine)
    local_existing = (settings.key_dir / "master.key").exists()
    kms = build_kms(
        settings.kms,
        key_dir=settings.key_dir,
        vault_addr=settings.vault_addr,
        vault_token=settings.vault_token.get_secret_value() if settings.vault_token else None,
        vault_mount=settings.vault_transit_mount,
        timeout=settings.kms_timeout_seconds,
    )
    if settings.kms == "local" and not local_existing:
        created.append(f"local keystore {settings.key_dir / 'keystore.sqlite3'} and master key (0600)")
    keyring = SubjectKeyring(kms, uow, DekCache(settings.dek_cache_entries, settings.dek_cache_ttl_seconds))
    pseudonyms = Pseudonymizer.from_file(Path(settings.key_dir / "pepper.key"))
    limits = Limits(max_content_bytes=settings.max_content_bytes)
    compactor = Compactor(uow, retention=timedelta(days=settings.compaction_retention_days))
    signer = load_signer(settings)
    audit = AuditLog(uow, signer, log_origin(settings))
    reports = ErasureReports(audit, signer)
    return Container(
        settings=settings,
        uow=uow,
        kms=kms,
        keyring=keyring,
        pseudonyms=pseudonyms,
        memories=MemoryService(uow, keyring, pseudonyms, limits),
        search=SearchService(uow, keyring, pseudonyms),
        erasure=ErasureService(
            uow,
            kms,
            keyring,
            pseudonyms,
            extra_steps=[compacted_step(compactor), reported_step(audit, signer, reports)],
        ),
        compactor=compactor,
        audit=audit,
        reports=reports,
        created=created,
    )
