"""The refs a subject was stored under before subject ids were folded (migration 0028).

A release before 0028 keyed "alice\u200b-x" (a zero-width space inside) apart from "alice-x";
today both fold to "alice-x" (``audit.certificate_format.fold_subject_id``). The ids are sealed
inside the memories' envelopes and the refs are keyed by the server's pepper, so only a
process holding both can tell which stored refs are spellings of which folded id:
``rederive`` opens one envelope per stored subject ref (one KMS unwrap each, once, from
``lethe migrate``) and records, for each ref whose id folds to another id, the folded id's
ref. The stored rows keep their ref (their AAD and key names bind it); a forget, or a
subject-access export, of the folded id also covers its aliases (``aliases_of``).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.audit.certificate_format import fold_subject_id
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.custody.sealing import open_rows
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import memories, subject_aliases


def aliases_of(conn: Connection, tenant_id: str, subject_ref: str) -> list[str]:
    """The refs an earlier release stored this subject under (unfolded spellings), sorted."""
    a = subject_aliases
    q = sa.select(a.c.alias_ref).where(a.c.tenant_id == tenant_id, a.c.subject_ref == subject_ref)
    return sorted(conn.execute(q).scalars())


def rederive(uow: UnitOfWork, keyring: SubjectKeyring, pseudonyms: Pseudonymizer) -> int:
    """Record the folded ref of every stored subject whose id holds default-ignorable code
    points; the number of aliases added. Idempotent: refs already recorded are not opened
    again, and a subject whose key is destroyed needs none (nothing of it can be read)."""
    found: list[dict[str, str]] = []
    with uow.maintenance("subject alias re-derivation"):
        with uow.read() as conn:
            stored = conn.execute(sa.select(memories.c.tenant_id, memories.c.subject_ref).distinct()).all()
            known = set(conn.execute(sa.select(subject_aliases.c.tenant_id, subject_aliases.c.alias_ref)))
        for tenant, ref in stored:
            if (tenant, ref) in known:
                continue
            with uow.read() as conn:
                subject_id = _one_subject_id(conn, keyring, tenant, ref)
            if subject_id is None or fold_subject_id(subject_id) == subject_id:
                continue
            folded = pseudonyms.subject_ref(tenant, fold_subject_id(subject_id))
            if folded != ref:
                found.append({"tenant_id": tenant, "alias_ref": ref, "subject_ref": folded})
        if found:
            with uow.write() as conn:
                conn.execute(sa.insert(subject_aliases), found)
    return len(found)


def _one_subject_id(conn: Connection, keyring: SubjectKeyring, tenant: str, ref: str) -> str | None:
    """The subject id sealed in the newest readable memory of ``ref`` (one ref, one id)."""
    m = memories
    rows: list[Any] = list(
        conn.execute(
            sa.select(m)
            .where(m.c.tenant_id == tenant, m.c.subject_ref == ref, m.c.ciphertext.is_not(None))
            .order_by(m.c.created_seq.desc())
            .limit(1)
        )
    )
    opened = open_rows(conn, keyring, rows)
    return next((o.subject_id for o in opened.values()), None)
