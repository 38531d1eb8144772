"""Subject access requests (GDPR Art. 15) and portability (Art. 20): a signed export.

A privacy officer asks "what does Lethe hold about this subject?" and gets one canonical
JSON document (``vault.audit.export_format``): every readable memory of the subject in
the tenant, across agents, purposes and statuses, decrypted, with provenance, authority,
trust, confidence, timestamps, supersession links and what was derived from it, under a
manifest of counts, signed with the audit log's Ed25519 key so anyone holding the issuer's
public key can verify it offline (``vault.audit.verify_export``).

Each request is one ``subject_access.exported`` audit event: who, when, how many items
and the export's SHA-256; never content. The export is refused for a subject behind the
erasure fence (a forget was requested: the subject is being, or has been, erased) and
allowed under a legal hold, which preserves data and does not withhold it from its subject.

Exceptions: ``OutOfScope`` (403), ``InvalidCommand`` (422), ``SubjectForgotten`` (409),
``StoreUnavailable`` (503); see ``SubjectAccessService``.
"""

from __future__ import annotations

import hashlib
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.checkpoint import key_id
from lethe.vault.audit.export_format import FORMAT, body_sha256, signed_bytes, tally
from lethe.vault.audit.log import b64
from lethe.vault.canonical import canonical_json
from lethe.vault.clock import iso, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.custody.subject_aliases import aliases_of
from lethe.vault.errors import InvalidCommand, OutOfScope, SubjectForgotten
from lethe.vault.memory.validation import normal_subject_id
from lethe.vault.model import Caller, Role
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.tables import legal_holds
from lethe.vault.store.tenancy import for_caller
from lethe.vault.subject_access.collect import collect
from lethe.vault.webhooks.events import ACCESS_EXPORT_READY, record

SUBJECT_ACCESS_EXPORTED = "subject_access.exported"
FORMATS = ("json", "html", "pdf")


@dataclass(frozen=True)
class SubjectExport:
    """A signed export: ``document`` is its canonical JSON, byte for byte as signed."""

    id: str
    tenant_id: str
    document: bytes
    items: int
    forgotten: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.document).hexdigest()


class SubjectAccessService:
    """Builds, signs and records subject access exports (privacy officers only).

    Exceptions:
    - ``OutOfScope`` (403): the caller is not a privacy officer.
    - ``InvalidCommand`` (422): the subject id is empty or too long, or the format unknown.
    - ``SubjectForgotten`` (409): the erasure fence is up for the subject (a forget was
      requested); what remains is pseudonymous and cannot be opened.
    - ``StoreUnavailable`` (503): the database or the KMS cannot be reached.
    """

    def __init__(
        self,
        uow: UnitOfWork,
        keyring: SubjectKeyring,
        pseudonyms: Pseudonymizer,
        signer: Ed25519Signer,
        origin: str,
        clock: Callable[[], datetime] = utcnow,
        *,
        log: EventLog,
    ) -> None:
        self.uow = uow
        self.keyring = keyring
        self.pseudonyms = pseudonyms
        self.signer = signer
        self.origin = origin
        self.clock = clock
        self.log = log

    @for_caller
    def export(self, caller: Caller, subject_id: str, fmt: str = "json") -> SubjectExport:
        """Everything held about the subject in the caller's tenant, signed; one audit event."""
        if caller.role is not Role.PRIVACY_OFFICER:
            raise OutOfScope("only a privacy officer may request a subject's data")
        if fmt not in FORMATS:
            raise InvalidCommand(f"format is one of {', '.join(FORMATS)}")
        raw, subject_id = subject_id, normal_subject_id(subject_id)
        tenant = caller.tenant_id
        ref = self.pseudonyms.subject_ref(tenant, subject_id)
        refs = {ref} | {
            self.pseudonyms.unnormalised_subject_ref(tenant, form)  # stores older than NFC ids
            for form in (raw, unicodedata.normalize("NFD", subject_id))
        }
        with self.uow.read() as conn:
            self._refuse_fenced(conn, tenant, ref)
            refs |= set(aliases_of(conn, tenant, ref))  # spellings folded since (migration 0028)
            held = collect(conn, self.keyring, tenant, refs)
        now = self.clock()
        export_id = str(uuid.uuid4())
        public = self.signer.public_key_raw()
        kid = key_id(self.origin, public).hex()
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "export_id": export_id,
            "tenant_id": tenant,
            "generated_at": iso(now),
            "requested_by": caller.principal,
            "subject": {"subject_id": subject_id, "subject_ref": ref},
            "issuer": {
                "origin": self.origin,
                "key_id": kid,
                "public_key_sha256": hashlib.sha256(public).hexdigest(),
            },
            "signing_key_id": kid,
            "counts": {
                **tally(held.items, held.forgotten, held.retracted),
                "unreadable": held.unreadable,
                "derived_elsewhere": len(held.derived_elsewhere),
            },
            "derived_elsewhere": held.derived_elsewhere,
            "body": "items",
            "body_sha256": body_sha256(held.items),
        }
        unsigned = {"manifest": manifest, "items": held.items}
        value = b64(self.signer.sign(signed_bytes(unsigned)))
        signature = {"algorithm": "Ed25519", "key_id": kid, "value": value}
        document = canonical_json({**unsigned, "signature": signature})
        export = SubjectExport(export_id, tenant, document, len(held.items), held.forgotten)
        with self.uow.write() as conn:
            self._refuse_fenced(conn, tenant, ref)  # a forget filed meanwhile wins
            payload = {
                "export_id": export_id,
                "requested_by": caller.principal,
                "items": export.items,
                "forgotten": export.forgotten,
                "derived_elsewhere": len(held.derived_elsewhere),
                "format": fmt,
                "document_sha256": export.sha256,
            }
            event = Event(SUBJECT_ACCESS_EXPORTED, tenant, payload, subject_ref=ref, occurred_at=iso(now))
            self.log.append(conn, event)
            ready = {"export_id": export_id, "format": fmt, "items": export.items}
            ready["document_sha256"] = export.sha256
            record(conn, tenant, ACCESS_EXPORT_READY, ready, now)  # the webhooks' outbox
        return export

    def _refuse_fenced(self, conn: Any, tenant_id: str, subject_ref: str) -> None:
        """A subject whose erasure was accepted is exported only while a legal hold keeps its
        data: the hold is a duty to keep, and the officer's access goes with it."""
        if self.keyring.is_fenced(conn, tenant_id, subject_ref) and not held(conn, tenant_id, subject_ref):
            raise SubjectForgotten(
                "this subject was forgotten (or a forget was requested): nothing of it can be exported"
            )


def held(conn: Any, tenant_id: str, subject_ref: str) -> bool:
    """Whether a legal hold that is not lifted covers the subject."""
    q = sa.select(legal_holds.c.id).where(
        legal_holds.c.tenant_id == tenant_id,
        legal_holds.c.subject_ref == subject_ref,
        legal_holds.c.lifted_at.is_(None),
    )
    return conn.execute(q.limit(1)).first() is not None
