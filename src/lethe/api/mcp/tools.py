"""The MCP tools and resources: each one call of the HTTP API, with the caller's own token.

A tool never decides what a caller may do: the HTTP API does, as for any request with
that token, and its refusal comes back as a tool error naming the problem (``403 Out of
scope: ...``), never with the caller's data in it. ``purpose`` may be left out when the
token allows exactly one.

What a model says never decides trust: ``remember`` takes no source type. What the model
stores is its own claim, recorded as ``agent_inference`` (quarantined until a reviewer
promotes it), unless the server was started for a user channel (``LETHE_MCP_USER_CHANNEL``,
``lethe mcp --user-channel``), whose source type it records instead; the HTTP API then
refuses the write unless the token may assert that type. A model-supplied ``source_type``
is refused before the call (``refuse_claimed_trust``), never silently dropped: the model
(and whoever reads the transcript) learns that it did not decide.

Exceptions: ``ToolError`` / ``ResourceError`` (the SDK reports them to the client as
errors) carrying the HTTP problem's status, title and detail, or naming the refused
``source_type``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from lethe.api.mcp.identity import Identity
from lethe.client import AsyncLetheClient, LetheError, Provenance
from lethe.client.models import ErasureAccepted, ErasureRequest, Memory, SearchResult
from lethe.vault.model import Kind, SourceType

T = TypeVar("T")
Identify = Callable[[], Identity | None]
Connect = Callable[[Identity], AsyncLetheClient]

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# Forgetting is destructive; asking twice forgets no more than asking once.
ERASE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

Id = Annotated[str, Field(min_length=1, max_length=64)]
SubjectId = Annotated[str, Field(min_length=1, max_length=256, description="The person the memory is about.")]
Purpose = Annotated[
    str | None, Field(default=None, max_length=64, description="Omit when the token allows one purpose.")
]


CLAIMED_TRUST = (
    "source_type is not accepted: a model does not decide a memory's trust. This server records "
    "what you store as {recorded}; leave source_type out."
)


class ProvenanceArg(BaseModel):
    """Where the memory comes from. No source type: the server's configuration sets it."""

    source_ref: str = Field(min_length=1, max_length=512, description="Session/turn, tool, document or URL.")
    sources: list[str] = Field(default_factory=list, max_length=1000, description="Summaries: their inputs.")
    url: str | None = Field(
        default=None, max_length=2048, description="The page read (required for web_page)."
    )


def recorded_as(channel: SourceType | None) -> SourceType:
    """The source type ``remember`` records: the user channel's, else the model's own claim."""
    return channel or SourceType.AGENT_INFERENCE


def refuse_claimed_trust(tool: str, arguments: dict[str, Any], channel: SourceType | None) -> None:
    """``ToolError`` when a model sends ``source_type`` to ``remember`` (at the top or in
    ``provenance``): the arguments' model would drop it silently, and a silent drop would let
    the model believe it chose."""
    if tool != "remember":
        return
    provenance = arguments.get("provenance")
    if "source_type" in arguments or (isinstance(provenance, dict) and "source_type" in provenance):
        raise ToolError(CLAIMED_TRUST.format(recorded=_what_it_means(recorded_as(channel))))


def _what_it_means(source: SourceType) -> str:
    if source is SourceType.AGENT_INFERENCE:
        return "agent_inference: quarantined, and not recalled until a reviewer promotes it"
    return f"{source.value} (this server is a user channel)"


class Tools:
    """Registers the tools and resources on a server; ``identify`` names the caller of a request.

    ``channel``: the source type of a user channel (every ``remember`` records it); None:
    ``agent_inference``.
    """

    def __init__(self, identify: Identify, connect: Connect, channel: SourceType | None = None) -> None:
        self.identify = identify
        self.connect = connect
        self.channel = channel

    def caller(self) -> Identity:
        who = self.identify()
        if who is None:
            raise ToolError("no Lethe token for this request")
        return who

    def purpose(self, purpose: str | None) -> str:
        if purpose:
            return purpose
        allowed = self.caller().purposes
        if len(allowed) != 1:
            raise ToolError(f"purpose is required: this token may use {', '.join(allowed) or 'none'}")
        return allowed[0]

    async def call(
        self, op: Callable[[AsyncLetheClient], Awaitable[T]], error: type[Exception] = ToolError
    ) -> T:
        """Run one client operation with the caller's token; a refusal becomes the SDK's error."""
        async with self.connect(self.caller()) as lethe:
            try:
                return await op(lethe)
            except LetheError as exc:
                raise error(str(exc)) from None

    def register(self, server: MCPServer) -> None:
        recorded = recorded_as(self.channel)

        @server.tool(title="Remember", annotations=WRITE, description=_remember_doc(recorded))
        async def remember(
            subject_id: SubjectId,
            kind: Kind,
            content: Annotated[str, Field(min_length=1)],
            provenance: ProvenanceArg,
            purpose: Purpose = None,
            confidence: Annotated[float, Field(ge=0, le=1)] = 1.0,
            supersedes_id: Annotated[str | None, Field(max_length=36)] = None,
            ttl_seconds: Annotated[int | None, Field(gt=0, le=10 * 365 * 86400)] = None,
            idempotency_key: Annotated[str | None, Field(min_length=1, max_length=128)] = None,
        ) -> Memory:
            p = Provenance(
                recorded.value, provenance.source_ref, tuple(provenance.sources), url=provenance.url
            )
            return await self.call(
                lambda c: c.write_memory(
                    subject_id,
                    self.purpose(purpose),
                    kind.value,
                    content,
                    p,
                    confidence=confidence,
                    supersedes_id=supersedes_id,
                    ttl_seconds=ttl_seconds,
                    idempotency_key=idempotency_key,
                )
            )

        @server.tool(title="Recall", annotations=READ)
        async def recall(
            query: Annotated[str, Field(min_length=1, max_length=4096)],
            purpose: Purpose = None,
            subject_id: Annotated[str | None, Field(max_length=256)] = None,
            kinds: list[Kind] | None = None,
            limit: Annotated[int, Field(ge=1, le=100)] = 10,
            token_budget: Annotated[int, Field(ge=1, le=1_000_000)] = 2000,
        ) -> SearchResult:
            """Active memories in this token's scope, ranked for the query, within a token budget."""
            return await self.call(
                lambda c: c.search_memories(
                    query,
                    self.purpose(purpose),
                    subject_id=subject_id,
                    kinds=[k.value for k in kinds or ()],
                    limit=limit,
                    token_budget=token_budget,
                )
            )

        @server.tool(title="Get a memory", annotations=READ)
        async def get_memory(memory_id: Id) -> Memory:
            """One memory by id, if this token may read it."""
            return await self.call(lambda c: c.get_memory(memory_id))

        @server.tool(title="Request erasure", annotations=ERASE)
        async def request_erasure(
            subject_id: SubjectId,
            legal_basis: Annotated[str, Field(min_length=1, max_length=64, description="e.g. gdpr-art17-1a")],
            reference: Annotated[str | None, Field(max_length=200)] = None,
        ) -> ErasureAccepted:
            """Forget a person: a durable erasure request (key destroyed, log compacted, certificate
            issued). Poll erasure_status for progress and the certificate id."""
            return await self.call(lambda c: c.request_erasure(subject_id, legal_basis, reference))

        @server.tool(title="Erasure status", annotations=READ)
        async def erasure_status(request_id: Id) -> ErasureRequest:
            """An erasure request's status, steps and evidence, and its certificate id once issued."""
            return await self.call(lambda c: c.get_erasure_request(request_id))

        @server.tool(title="Get an erasure certificate", annotations=READ)
        async def get_certificate(report_id: Id) -> dict[str, Any]:
            """The signed erasure certificate (verify it offline with `lethe verify`)."""
            report = await self.call(lambda c: c.get_erasure_report(report_id))
            return report.json()

        @server.resource(
            "lethe://certificates/{report_id}",
            name="certificate",
            title="Erasure certificate",
            mime_type="application/json",
        )
        async def certificate(report_id: str) -> str:
            """The signed certificate, byte for byte as issued."""
            report = await self.call(lambda c: c.get_erasure_report(report_id), ResourceError)
            return report.content.decode("utf-8")

        @server.resource(
            "lethe://audit/checkpoint",
            name="audit_checkpoint",
            title="Audit log checkpoint",
            mime_type="text/plain",
        )
        async def audit_checkpoint() -> str:
            """A signed C2SP checkpoint of the audit log."""
            return await self.call(lambda c: c.get_audit_checkpoint(), ResourceError)


def _remember_doc(recorded: SourceType) -> str:
    """The ``remember`` description the model reads: what happens to what it stores."""
    if recorded is SourceType.AGENT_INFERENCE:
        what = (
            "What you store is recorded as your own inference (agent_inference), whatever its content "
            "says: it is kept in quarantine and is not recalled until a reviewer promotes it."
        )
    else:
        what = (
            f"This server is a user channel: what you store is recorded as {recorded.value}, as the "
            "server was configured; the token must be allowed to assert it."
        )
    return (
        f"Store a memory about a person. {what} The trust of a memory comes from the server's "
        "configuration and the token, never from the model: there is no source_type argument. "
        "supersedes_id corrects an earlier memory."
    )
