"""``LetheStore``: a LangGraph ``BaseStore`` whose items are Lethe memories (see ``mapping``).

Each operation is a small plan: a generator that yields client ``Call``s and receives
their results (or their errors). ``batch`` runs the plans with a ``LetheClient``,
``abatch`` with an ``AsyncLetheClient`` (or ``batch`` in a thread when the store has only
the sync client), so the rules are written once. Operations run in order, each to the
end, so a batch reads its own earlier writes.

Everything goes through the HTTP API with the agent's token. The source type every write
declares comes from the store's configuration (``source_type``, required), never from the
value, and the token must be allowed to assert it: a write from a quarantined source lands
in quarantine and reads as absent until a reviewer promotes it; search is Lethe's scoped
recall, within ``token_budget``.
A delete (``PutOp(value=None)``) retracts the key's memory (``DELETE /v1/memories/{id}``):
its content leaves the store with the summaries that cite it, and the key is spent.

Exceptions: ``InvalidNamespaceError`` (a namespace the mapping cannot carry); the
client's errors (``lethe.client.errors``) for refusals; ``KeyUnavailable`` for a put on a
key whose memory is expired, deleted or in quarantine; ``TimeoutError`` from ``forget_subject``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Generator, Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

import lethe.integrations.langgraph.mapping as m
from lethe.client import AsyncLetheClient, Conflict, LetheClient, LetheError, NotFound, Provenance
from lethe.client.calls import Call
from lethe.client.models import Identity, Memory
from lethe.client.operations import Operations

Plan = Generator[Call[Any], Any, Any]
MAX_SEARCH = 100  # the API's largest search limit
MAX_BUDGET = 1_000_000  # the API's largest token budget
PUT_ATTEMPTS = 3  # a concurrent writer moved the version: read again and retry
# The source types Lethe knows (the server's ``SourceType``; it decides what each one means).
SOURCE_TYPES = ("user_statement", "operator_config", "tool_result", "web_page", "agent_inference", "summary")


class KeyUnavailable(LetheError):
    """The key's memory exists but cannot be read: expired, deleted, or in quarantine awaiting review.

    Lethe never reuses a memory's id, so an expired or deleted key stays spent: write under a
    new key. A quarantined one becomes writable again once a reviewer promotes it.
    """


class LetheStore(BaseStore):
    """A LangGraph store over Lethe, scoped by the agent token of ``client``.

    ``purpose`` is the Lethe purpose every item is written and searched under; ``id_key``
    the secret that turns keys into memory ids (default ``LETHE_STORE_ID_KEY``; keep it like
    a password: another key finds none of the items by key). The agent an item's id is
    derived from is the token's own, read from the server (``GET /v1/whoami``) before the
    store's first read or write by key; ``agent_id``, if given, must name that agent, and a
    store whose ``agent_id`` does not is refused before anything is written.

    ``source_type`` (required, no default) is what every ``put`` declares, with ``source_ref``;
    it is the deployment's statement of where the values come from, never read from a value,
    and the token must be allowed to assert it (else every ``put`` is refused, 403). What it
    means for ``put`` then ``get``:

    - ``user_statement`` (the values are what the user said, e.g. a user-facing channel):
      active at once; ``get`` and ``search`` return the value right after ``put``.
    - ``agent_inference`` (the model's own conclusions), ``tool_result``, ``web_page``:
      quarantined; ``get`` returns None and ``search`` leaves it out until a reviewer
      promotes it, and a second ``put`` on the key raises ``KeyUnavailable`` meanwhile.
    - ``summary`` needs the ids it summarises, so it fits ``with_provenance`` rather than a
      whole store; ``operator_config`` is for operator tokens, which have no agent scope.

    ``with_provenance`` gives the same store writing with another source (a tool result, a
    web page): again the code's choice, not the value's.
    ``session_id``: the agent's session, sent with every write and search; once it is tainted
    (it wrote a web page or a tool result, or was marked) its puts are quarantined and read as
    absent until promoted.
    """

    supports_ttl = True

    def __init__(
        self,
        client: LetheClient | None = None,
        *,
        purpose: str,
        agent_id: str | None = None,
        id_key: str | bytes | None = None,
        aclient: AsyncLetheClient | None = None,
        source_type: str,
        source_ref: str = "langgraph-store",
        token_budget: int = 8000,
        confidence: float = 1.0,
        session_id: str | None = None,
    ) -> None:
        key = id_key if id_key is not None else os.environ.get("LETHE_STORE_ID_KEY", "")
        key = key.encode() if isinstance(key, str) else key
        if len(key) < 16:
            raise ValueError(
                "id_key (or LETHE_STORE_ID_KEY) must be a secret of at least 16 bytes, the same for "
                "every run of this store: it turns keys into memory ids (make one with "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
            )
        if client is None and aclient is None:
            raise ValueError("give a LetheClient, an AsyncLetheClient, or both")
        if source_type not in SOURCE_TYPES:
            raise ValueError(f"source_type must be one of {', '.join(SOURCE_TYPES)}")
        self.client = client
        self.aclient = aclient
        self.purpose = purpose
        self.agent_id = agent_id  # the token's agent, once the server said it (or as given until then)
        self._agent_checked = False
        self.provenance = Provenance(source_type, source_ref)
        self.token_budget = token_budget
        self.confidence = confidence
        self._id_key = key
        self.session_id = session_id  # the agent's session (Lethe-Session) of every write and search
        self.ttl_config = TTLConfig(refresh_on_read=False)

    def with_provenance(self, provenance: Provenance, confidence: float | None = None) -> LetheStore:
        """The same store writing with another provenance (a tool result, a web page, ...)."""
        clone = object.__new__(LetheStore)
        clone.__dict__.update(self.__dict__)
        clone.provenance = provenance
        clone.confidence = self.confidence if confidence is None else confidence
        return clone

    def __repr__(self) -> str:
        return f"LetheStore(purpose={self.purpose!r}, agent_id={self.agent_id!r})"

    # -- running plans -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise RuntimeError("this LetheStore has only an AsyncLetheClient: use the async methods")
        return [_drive(self.client, self._plan(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.aclient is None:
            return await asyncio.to_thread(self.batch, list(ops))
        return [await _adrive(self.aclient, self._plan(op)) for op in ops]

    def _plan(self, op: Op) -> Plan:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown operation {type(op).__name__}")

    # -- the plans ----------------------------------------------------------------------

    def _agent(self) -> Plan:
        """The token's agent, asked of the server once per store: before the first id is
        derived, so a store naming another agent is refused before it writes anything."""
        if not self._agent_checked:
            me: Identity = yield Operations.whoami.build()
            if me.agent_id is None:
                raise ValueError(f"LetheStore needs an agent token; this one is a {me.role} token")
            if self.agent_id is not None and self.agent_id != me.agent_id:
                raise ValueError(
                    f"agent_id {self.agent_id!r} is not the token's agent ({me.agent_id!r}): "
                    "leave agent_id out, the store reads it from the token"
                )
            self.agent_id, self._agent_checked = me.agent_id, True
        assert self.agent_id is not None
        return self.agent_id

    def _id(self, place: m.Place, key: str) -> str:
        """A key's memory id under the store's agent (the token's once ``_agent`` ran)."""
        if self.agent_id is None:
            raise RuntimeError("the store's agent is not known yet: it is read before the first call")
        return m.memory_id(self._id_key, self.agent_id, self.purpose, place, key)

    def _key_id(self, place: m.Place, key: str) -> Plan:
        yield from self._agent()
        return self._id(place, key)

    def _read(self, memory_id: str) -> Plan:
        try:
            return (yield Operations.get_memory.build(memory_id))
        except NotFound:
            return None

    def _get(self, op: GetOp) -> Plan:
        place = m.place_of(op.namespace)
        memory = yield from self._read((yield from self._key_id(place, op.key)))
        return _item(memory, Item) if memory is not None else None

    def _delete(self, memory_id: str) -> Plan:
        """Retract the key's memory (and the summaries citing it); a key never written, or
        already deleted, is no error: deleting it is a no-op, as ``BaseStore`` documents."""
        with contextlib.suppress(NotFound):
            yield Operations.delete_memory.build(memory_id)
        return None

    def _put(self, op: PutOp) -> Plan:
        place = m.place_of(op.namespace)
        memory_id = yield from self._key_id(place, op.key)
        if op.value is None:
            return (yield from self._delete(memory_id))
        for attempt in range(1, PUT_ATTEMPTS + 1):
            current: Memory | None = yield from self._read(memory_id)
            write = Operations.write_memory.build(
                place.subject_id,
                self.purpose,
                place.kind,
                m.envelope(op.key, op.value, m.now()),
                self.provenance,
                confidence=self.confidence,
                ttl_seconds=m.ttl_seconds(op.ttl) if op.value is not None else None,
                memory_id=memory_id,
                expected_version=current.version if current is not None else 0,
                session_id=self.session_id,
            )
            try:
                yield write
            except Conflict:
                if current is None and attempt == PUT_ATTEMPTS:
                    raise KeyUnavailable(
                        "this key's memory is expired, deleted or in quarantine; "
                        "Lethe never reuses a memory id"
                    ) from None
                if attempt == PUT_ATTEMPTS:
                    raise
                continue
            return None
        return None

    def _search(self, op: SearchOp) -> Plan:
        subject_id, kinds = m.search_scope(op.namespace_prefix)
        wanted = op.offset + op.limit
        limit = MAX_SEARCH if op.filter else max(1, min(MAX_SEARCH, wanted))
        found = yield Operations.search_memories.build(
            op.query or m.NO_TERMS,
            self.purpose,
            subject_id=subject_id,
            kinds=kinds,
            limit=limit,
            token_budget=self.token_budget,
            session_id=self.session_id,
        )
        items = [_item(memory, SearchItem) for memory in found.items]
        kept = [i for i in items if i is not None and m.matches(i.value, op.filter)]
        return kept[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan:
        found = yield Operations.search_memories.build(
            m.NO_TERMS, self.purpose, limit=MAX_SEARCH, token_budget=MAX_BUDGET
        )
        namespaces = {i.namespace for i in (_item(x, SearchItem) for x in found.items) if i is not None}
        for condition in op.match_conditions or ():
            namespaces = {ns for ns in namespaces if m.namespace_matches(ns, condition)}
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # -- erasure ------------------------------------------------------------------------

    def forget_subject(
        self,
        subject_id: str,
        officer: LetheClient,
        legal_basis: str = "gdpr-art17-1a",
        reference: str | None = None,
        timeout: float = 120.0,
    ) -> str:
        """Forget a person everywhere in Lethe and return the erasure certificate's id.

        Filed with ``officer``, a privacy officer's client (an agent token may not forget);
        waits until the server's runner has completed and certified the erasure.
        """
        accepted = officer.request_erasure(subject_id, legal_basis, reference)
        deadline = time.monotonic() + timeout
        while (job := officer.get_erasure_request(accepted.id)).completed_at is None or not job.report_id:
            if time.monotonic() > deadline:
                raise TimeoutError(f"erasure request {accepted.id} not complete after {timeout:.0f}s")
            time.sleep(0.5)
        return job.report_id


def _item(memory: Memory, cls: type[Item]) -> Any:
    """The LangGraph item a memory holds, or None (a tombstone, or not active)."""
    if memory.status != "active" or memory.subject_id is None:
        return None
    opened = m.open_content(memory.id, memory.content)
    if opened.value is None:
        return None
    updated = max(opened.updated_at or memory.created_at, memory.created_at)
    fields = {
        "namespace": (memory.subject_id, memory.kind),
        "key": opened.key,
        "value": opened.value,
        "created_at": memory.created_at,
        "updated_at": updated,
    }
    score = getattr(memory, "score", None)
    return SearchItem(**fields, score=score.total if score else None) if cls is SearchItem else Item(**fields)


def _resume(plan: Plan, outcome: tuple[bool, Any]) -> tuple[bool, Any]:
    """Hand the last call's result (or error) to the plan: (True, its result) once it has
    finished, else (False, the next call)."""
    try:
        return False, plan.send(outcome[1]) if outcome[0] else plan.throw(outcome[1])
    except StopIteration as done:
        return True, done.value


def _drive(client: LetheClient, plan: Plan) -> Any:
    """Run a plan with the sync client, each call's result (or error) sent back into it."""
    finished, step = _resume(plan, (True, None))
    while not finished:
        try:
            result = client.send(step)
        except LetheError as exc:
            finished, step = _resume(plan, (False, exc))
        else:
            finished, step = _resume(plan, (True, result))
    return step


async def _adrive(client: AsyncLetheClient, plan: Plan) -> Any:
    finished, step = _resume(plan, (True, None))
    while not finished:
        try:
            result = await client.send(step)
        except LetheError as exc:
            finished, step = _resume(plan, (False, exc))
        else:
            finished, step = _resume(plan, (True, result))
    return step


__all__ = ["KeyUnavailable", "LetheStore"]
