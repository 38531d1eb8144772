"""The governed write pipeline, reads and expiry: the memory core's commands.

Every command validates, decides standing from the policy table, then appends its
events and applies them to the projection in one transaction. Concurrency is the
database's job (compare-and-swap on ``version``, unique keys), never an in-process lock.
Memory ids are unique per tenant only, so every lookup by id is the caller's tenant's:
an id another tenant uses reads, and can be written, exactly like an unknown one. The
SQL lives in ``memory.repository``; this module keeps the rules. A write's pieces (its
event, its request hash) are ``memory.write_event``; where it lands is
``memory.write_target``. Review (the queue, promotion, rejection) is ``memory.review``;
retraction is ``memory.retraction``.

Exceptions: ``InvalidCommand`` (422) and its subclasses (``ForbiddenContent``: the data
policy), ``ContentTooLarge`` (413), ``PolicyRefused`` (``SourceTypeRefused`` among them) and
``OutOfScope`` (403), ``NotFound`` (404), ``VersionConflict``, ``IdempotencyConflict`` and
``SubjectForgotten`` (409), ``StoreUnavailable`` (503); each is explained in
``MemoryService``'s docstring.
"""

from __future__ import annotations

import hmac
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from lethe.vault.access.known_tokens import TOKEN_LIVE, check_not_revoked, confirm
from lethe.vault.clock import iso, utcnow
from lethe.vault.custody.key_repository import STALE, WRITABLE, WRITABLE_COLUMNS, write_verdict
from lethe.vault.custody.keyring import SubjectKey, SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.errors import (
    IdempotencyConflict,
    InvalidCommand,
    NotFound,
    OutOfScope,
    SubjectForgotten,
    VersionConflict,
)
from lethe.vault.memory import agent_sessions, summaries, write_target
from lethe.vault.memory import repository as repo
from lethe.vault.memory.agent_sessions import DEFAULT_SESSION_TTL
from lethe.vault.memory.data_policy import DataPolicy, default_policy
from lethe.vault.memory.validation import ValidWrite, normal_subject_id, validate_write
from lethe.vault.memory.vectors import VectorIndex
from lethe.vault.memory.visibility import may_read
from lethe.vault.memory.write_event import (
    PreparedWrite,
    Target,
    origin_of,
    request_hash,
    stored_in_session,
    written_event,
)
from lethe.vault.model import (
    Caller,
    MemoryItem,
    SourceType,
    Status,
    WriteCommand,
    lowest_trust,
)
from lethe.vault.policy import DEFAULT_POLICY, Limits, Policy, Standing, admit_source
from lethe.vault.store import driver_reads
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.pipeline import inserts_sent_together
from lethe.vault.store.projection import (
    MEMORY_EXPIRED,
    MEMORY_SUPERSEDED,
    apply,
    apply_many,
)
from lethe.vault.store.tenancy import for_caller, maintenance_job

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """About four bytes a token: close enough for budgeting, and cheap."""
    return max(1, (len(text.encode()) + 3) // 4)


class _StaleKey(Exception):
    """The cached key of a write is no longer the subject's live one: fetch it and retry."""


def _check_verdict(verdict: str, cached_key: bool) -> None:
    """A write's key as its lock found it (``SubjectKeyring.writable``): a forget that committed
    first wins and the write is refused; a stale cached key is fetched again (``_StaleKey``)."""
    if verdict == STALE and cached_key:
        raise _StaleKey
    if verdict != WRITABLE:
        raise SubjectForgotten("this subject was forgotten; a privacy officer must reinstate it")


@dataclass(frozen=True)
class WriteOutcome:
    item: MemoryItem
    created: bool  # False when an idempotent retry returned the first result


class MemoryService:
    """Writes, reads and expiry of memories, each one event applied in one transaction.

    Exceptions:
    - ``InvalidCommand`` (422) and its subclasses, ``ContentTooLarge`` (413): the write
      is malformed (validation), or a bulk import holds an update; nothing was written.
    - ``ForbiddenContent`` (422): the content or a provenance reference holds a class the
      deployment's data policy forbids (``memory.data_policy``); nothing was written.
    - ``PolicyRefused`` (403): the policy table has no rule for the role and source type;
      ``SourceTypeRefused`` (403, a subclass): the credential may not assert the source type.
    - ``OutOfScope`` (403): the credential lacks the purpose.
    - ``NotFound`` (404): unknown id, another tenant's or agent's, or not visible to the caller.
    - ``VersionConflict`` (409): expected version is stale, the id is taken, or the memory
      is in a state the command cannot change (superseded, expired, retracted, forgotten);
      a retried write whose memory has since been retracted.
    - ``IdempotencyConflict`` (409): the idempotency key was used with another request.
    - ``SubjectForgotten`` (409): the erasure fence is up for the subject.
    - ``StoreUnavailable`` (503): the database or the KMS cannot be reached.
    """

    def __init__(
        self,
        uow: UnitOfWork,
        keyring: SubjectKeyring,
        pseudonyms: Pseudonymizer,
        limits: Limits | None = None,
        policy: Policy | None = None,
        token_counter: TokenCounter = estimate_tokens,
        clock: Callable[[], datetime] = utcnow,
        *,
        log: EventLog,
        vectors: VectorIndex | None = None,
        data_policy: DataPolicy | None = None,
        session_ttl: timedelta = DEFAULT_SESSION_TTL,
    ) -> None:
        self.vectors = vectors or VectorIndex(None)
        # What content the deployment never stores (``memory.data_policy``): built-in classes by default.
        self.data_policy = data_policy or default_policy()
        self.uow = uow
        self.keyring = keyring
        self.pseudonyms = pseudonyms
        self.limits = limits or Limits()
        self.policy: Policy = policy or DEFAULT_POLICY
        self.count_tokens = token_counter
        self.clock = clock
        self.log = log
        # What a write reads under its lock, in one statement: an earlier write under its
        # idempotency key, the subject's fence and key generations, the log's size.
        self._checks = sa.select(*repo.PRIOR_WRITE_COLUMNS, *WRITABLE_COLUMNS, log.size_column())
        # The same, for a caller whose token's revocation is still to be read (``confirm_token``).
        self._checks_confirming = self._checks.add_columns(TOKEN_LIVE)
        # With a session: its live taint too (``memory.agent_sessions``), before the token's.
        self._checks_in_session = self._checks.add_columns(agent_sessions.TAINT_COLUMN)
        self._checks_in_session_confirming = self._checks_in_session.add_columns(TOKEN_LIVE)
        self.session_ttl = session_ttl

    # -- writes -----------------------------------------------------------------------

    def _admit(self, caller: Caller, cmd: WriteCommand, now: datetime) -> tuple[ValidWrite, Standing]:
        """Validation, the credential's source types and the policy table: everything decided
        before a key is touched (``write`` and ``import_batch`` both come through here)."""
        valid = validate_write(cmd, self.limits, now)
        self.data_policy.check(cmd)  # ForbiddenContent: refused before a key is touched
        standing = admit_source(self.policy, caller, valid.source_type)
        if not caller.may_use(cmd.purpose):
            raise OutOfScope("the credential does not cover this purpose")
        return valid, standing

    def _prepare(
        self, caller: Caller, cmd: WriteCommand, now: datetime, key_for: Callable[[str], SubjectKey]
    ) -> PreparedWrite:
        """Admit the write, then key it: the subject's ref, its data key and the request hash."""
        valid, standing = self._admit(caller, cmd, now)
        subject_ref = self.pseudonyms.subject_ref(caller.tenant_id, cmd.subject_id)
        key = key_for(subject_ref)
        return PreparedWrite(
            caller=caller,
            agent_id=caller.writes_as,
            cmd=cmd,
            valid=valid,
            standing=standing,
            subject_ref=subject_ref,
            key=key,
            request_hash=request_hash(key.data_key, cmd),
        )

    def _summary_checked(self, conn: Connection, w: PreparedWrite, now: datetime) -> PreparedWrite:
        """A summary's cited ids checked under the write lock, and what it inherits from them
        (``memory.summaries``): its origins, the lowest trust, the earliest expiry. Any other
        write is returned as it is."""
        if w.valid.source_type is not SourceType.SUMMARY:
            return w
        prov = w.cmd.provenance
        assert prov is not None  # validated
        got = summaries.inherit(conn, w.caller, w.cmd.purpose, prov.sources, now)
        return replace(
            w,
            cmd=replace(w.cmd, provenance=replace(prov, origins=got.origins)),
            standing=replace(w.standing, trust=lowest_trust(w.standing.trust, got.origins.trust)),
            valid=replace(w.valid, expires_at=min(w.valid.expires_at, got.expires_at)),
        )

    def _written_event(self, w: PreparedWrite, at: Target, now: datetime) -> Event:
        """The ``memory.written`` event of a prepared write at its target (``memory.write_event``)."""
        return written_event(w, at, now, self.count_tokens(w.cmd.content))

    def _index_row(self, w: PreparedWrite, memory_id: str) -> dict[str, str]:
        tenant_id = w.caller.tenant_id
        terms = self.pseudonyms.term_hashes(tenant_id, w.cmd.content)
        source_ref = w.cmd.provenance.source_ref if w.cmd.provenance else None
        if source_ref:  # retraction by source finds it by this posting (``memory.retraction``)
            terms.add(self.pseudonyms.source_hash(tenant_id, source_ref))
        return repo.index_row(tenant_id, w.subject_ref, memory_id, terms)

    def _vector_row(self, w: PreparedWrite, at: Target, vector: bytes) -> dict[str, object]:
        return self.vectors.row(
            w.key.data_key,
            w.caller.tenant_id,
            w.subject_ref,
            at.memory_id,
            at.version,
            w.key.generation,
            vector,
        )

    @for_caller
    def write(
        self,
        caller: Caller,
        cmd: WriteCommand,
        *,
        confirm_token: bool = False,
        session_id: str | None = None,
    ) -> WriteOutcome:
        """``confirm_token``: the caller comes from ``TokenService.recall``, its revocation
        unread; the write transaction's first statement reads it (or, where the subject's key
        must be read or made first, a statement before that), and a revoked token is refused
        (``Unauthenticated``) with nothing written.

        ``session_id``: the agent's session (``memory.agent_sessions``). Its taint is read
        with the write's other checks; a tainted session's write is quarantined and records
        why, and an external write taints the session, in the write's transaction."""
        session_ref = None
        if session_id is not None:
            session_id = agent_sessions.check_session_id(session_id)
            session_ref = self.pseudonyms.session_ref(caller.tenant_id, caller.writes_as, session_id)
        cmd = replace(cmd, subject_id=normal_subject_id(cmd.subject_id))
        now = self.clock()
        vectors = self.vectors.embed([cmd.content])  # before the write lock: a model may be slow
        try:  # first with the key this process has cached, then (if it was stale) fetched again
            return self._write(caller, cmd, now, vectors, True, confirm_token, session_ref)
        except _StaleKey:
            return self._write(caller, cmd, now, vectors, False, confirm_token, session_ref)

    def _write(
        self,
        caller: Caller,
        cmd: WriteCommand,
        now: datetime,
        vectors: Any,
        cached_key: bool,
        confirm_token: bool,
        session_ref: str | None = None,
    ) -> WriteOutcome:
        tenant_id = caller.tenant_id
        unread = confirm_token  # the token's revocation, still to be read

        def key_for(ref: str) -> SubjectKey:
            nonlocal unread
            hit = self.keyring.cached_for_write(tenant_id, ref) if cached_key else None
            if hit is not None:
                return hit
            if unread:  # the key is read, or made at the KMS, before the write: read the token first
                with self.uow.read() as conn:
                    check_not_revoked(conn, caller.principal)
                unread = False
            return self.keyring.key_for_write(tenant_id, ref)

        w = self._prepare(caller, cmd, now, key_for)
        params = {
            "tenant_id": tenant_id,
            "agent_id": w.agent_id,
            "key": cmd.idempotency_key,
            "subject_ref": w.subject_ref,
            "generation": w.key.generation,
        }
        if unread:
            params["token_id"] = caller.principal
        if session_ref is None:
            checks = self._checks_confirming if unread else self._checks
        else:
            checks = self._checks_in_session_confirming if unread else self._checks_in_session
            params.update(agent_sessions.check_params(tenant_id, w.agent_id, session_ref, now))

        def work(conn: Connection) -> WriteOutcome | Event:
            nonlocal w
            row = driver_reads.rows(conn, checks, params)[0]
            if unread:
                confirm(row.token_live)  # before anything else: nothing is written, or replayed
                row = row[:-1]
            session_taint = None
            if session_ref is not None:
                session_taint, row = row[-1], row[:-1]
            (prior_hash, prior_id, *key_state, size) = row  # one row: every column is a scalar subquery
            if prior_id is not None:
                return WriteOutcome(
                    self._replay(conn, tenant_id, prior_hash, prior_id, w.request_hash), False
                )
            _check_verdict(write_verdict(w.key.generation, *key_state), cached_key)
            w = self._summary_checked(conn, w, now)
            at = write_target.target(conn, caller, w.agent_id, w.subject_ref, cmd, now)
            stored, taints = w, None  # the write as stored: a tainted session's is quarantined
            if session_ref is not None:
                stored, taints = stored_in_session(w, session_taint, at.memory_id, now)
            old = write_target.supersedable(conn, caller, w.agent_id, cmd) if cmd.supersedes_id else None
            # A create only inserts: they are sent together (``store.pipeline``). An update or a
            # correction compares and swaps, which reads row counts: one statement at a time.
            create = at.version == 1 and old is None
            with inserts_sent_together(conn) if create else nullcontext():
                written = self._emit(conn, self._written_event(stored, at, now), size)
                if taints is not None:  # an upsert: an insert, sent with the others
                    agent_sessions.taint(
                        conn, tenant_id, w.agent_id, session_ref, taints, now, self.session_ttl
                    )
                if old is not None:
                    self._emit(
                        conn,
                        Event(
                            MEMORY_SUPERSEDED,
                            tenant_id,
                            {"version": old.version + 1, "superseded_by": at.memory_id},
                            old.id,
                            old.subject_ref,
                            occurred_at=iso(now),
                        ),
                        written.seq,
                    )
                    summaries.expire_derived(conn, self.log, old, now)  # what cites it goes too
                if at.version > 1:
                    repo.drop_index_entry(conn, tenant_id, at.memory_id)
                repo.add_index_rows(conn, [self._index_row(w, at.memory_id)])
                if vectors is not None:
                    repo.add_vectors(conn, [self._vector_row(w, at, vectors[0])])
            return written  # the item is mapped from it after the commit, not read back

        try:
            # Concurrent writes of this process share a transaction (``store.group_commit``).
            done = self.uow.grouped(work)
        except IntegrityError as exc:
            # A concurrent writer took the id or the idempotency key first.
            with self.uow.read() as conn:
                first = self._idempotent_replay(conn, tenant_id, w.agent_id, cmd, w.request_hash)
            if first is not None:
                return WriteOutcome(first, created=False)
            raise VersionConflict("a memory with this id already exists") from exc
        if isinstance(done, WriteOutcome):
            return done
        item = repo.written_item(done, cmd.subject_id, cmd.content, origin_of(cmd))
        return WriteOutcome(item, created=True)

    @for_caller
    def import_batch(self, caller: Caller, cmds: list[WriteCommand]) -> int:
        """Bulk import of new memories (migrations, benchmarks): same validation, policy,
        encryption and events as ``write``, in one transaction with one round trip per table.
        All or nothing: one bad command or reused idempotency key rejects the batch."""
        now = self.clock()
        keys: dict[str, SubjectKey] = {}

        def key_for(ref: str) -> SubjectKey:  # one KMS unwrap per subject in the batch
            if ref not in keys:
                keys[ref] = self.keyring.key_for_write(caller.tenant_id, ref)
            return keys[ref]

        batch, index_rows, placed = [], [], []
        for cmd in (replace(c, subject_id=normal_subject_id(c.subject_id)) for c in cmds):
            if cmd.id is not None or cmd.supersedes_id is not None or cmd.expected_version:
                raise InvalidCommand("a bulk import only creates new memories")
            if cmd.provenance is not None and cmd.provenance.source_type == SourceType.SUMMARY:
                raise InvalidCommand("a bulk import holds no summaries: their sources are checked one by one")
            w = self._prepare(caller, cmd, now, key_for)
            at = Target(str(uuid.uuid4()), 1, now)
            batch.append(self._written_event(w, at, now))
            index_rows.append(self._index_row(w, at.memory_id))
            placed.append((w, at))
        vectors = self.vectors.embed([w.cmd.content for w, _ in placed])  # one batch, before the lock
        vector_rows = [self._vector_row(w, at, v) for (w, at), v in zip(placed, vectors or (), strict=False)]
        try:
            with self.uow.write() as conn:
                for ref, key in keys.items():
                    verdict = self.keyring.writable(conn, caller.tenant_id, ref, key.generation)
                    _check_verdict(verdict, cached_key=False)
                apply_many(conn, self.log.append_many(conn, batch))
                repo.add_index_rows(conn, index_rows)
                repo.add_vectors(conn, vector_rows)
        except IntegrityError as exc:
            raise IdempotencyConflict("an idempotency key in the batch was already used") from exc
        return len(batch)

    def _emit(self, conn: Connection, event: Event, log_size: int | None = None) -> Event:
        """Append ``event`` and apply it; the event as appended (its ``seq``)."""
        appended = self.log.append(conn, event, log_size)
        apply(conn, appended)
        return appended

    def _idempotent_replay(
        self, conn: Connection, tenant_id: str, agent_id: str, cmd: WriteCommand, request_hash: str
    ) -> MemoryItem | None:
        prior = repo.prior_write(conn, tenant_id, agent_id, cmd.idempotency_key)
        if prior is None:
            return None
        return self._replay(conn, tenant_id, prior.request_hash, prior.memory_id, request_hash)

    def _replay(
        self, conn: Connection, tenant_id: str, prior_hash: str, prior_id: str, request_hash: str
    ) -> MemoryItem:
        """The first result of a write retried under its idempotency key, if the request is the same."""
        if not hmac.compare_digest(prior_hash, request_hash):
            raise IdempotencyConflict("this idempotency key was already used with a different request")
        row = repo.by_id(conn, tenant_id, prior_id)
        if row.status == Status.RETRACTED:
            raise VersionConflict("the memory written under this key has been retracted")
        item = repo.open_item(conn, self.keyring, row)
        if item is None:
            raise SubjectForgotten("the memory written under this key has been forgotten")
        return item

    # -- reads ------------------------------------------------------------------------

    @for_caller
    def get(self, caller: Caller, memory_id: str) -> MemoryItem:
        with self.uow.read() as conn:
            row = repo.by_id_with_key(conn, caller.tenant_id, memory_id)
        if row is None or not self._visible(caller, row):
            raise NotFound("memory not found")
        item = repo.open_item_with_key(self.keyring, row)
        if item is None:
            raise NotFound("memory not found")
        return item

    def _visible(self, caller: Caller, row) -> bool:  # type: ignore[no-untyped-def]
        return may_read(caller, row, self.clock())

    # -- lifecycle ----------------------------------------------------------------------

    @maintenance_job("expiry sweep")
    def sweep_expired(self, batch: int = 500) -> int:
        """Append an ``expired`` event for each live memory past its expiry, and for each live
        summary built on one (``memory.summaries``: a summary never outlives its inputs).

        The scan for them runs in a read, outside the write lock: a server sweeps every 30 s
        in every worker, and writers waited for the whole scan (about 60 ms per 100,000
        memories on SQLite) even when it found nothing. The write re-reads what it found by
        key, under the lock (another worker may have expired them meanwhile)."""
        total = 0
        while True:
            now = self.clock()
            with self.uow.read() as conn:
                found = repo.live_past_expiry(conn, now, batch)
                derived = summaries.derived_live(conn, found)  # what cites them goes too
            if not found:
                return total
            with self.uow.write() as conn:
                rows = repo.live_past_expiry(conn, now, batch, among=[(r.tenant_id, r.id) for r in found])
                for r in rows:
                    self._emit(
                        conn,
                        Event(
                            MEMORY_EXPIRED,
                            r.tenant_id,
                            {"version": r.version + 1},
                            r.id,
                            r.subject_ref,
                            occurred_at=iso(now),
                        ),
                    )
                total += summaries.expire_still_live(conn, self.log, derived, now)
            total += len(rows)
            if len(found) < batch:
                return total
