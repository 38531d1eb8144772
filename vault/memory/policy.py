"""Who may write what, and with which standing: the content never assigns its own trust.

The policy table maps (caller role, source type) to the authority, trust and initial
status of a write. A pair missing from the table is refused. Kind TTLs live here too.

Exceptions: ``PolicyRefused`` (403) from ``standing_for``: the table has no rule for the pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from lethe.vault.errors import PolicyRefused
from lethe.vault.model import Authority, Kind, Role, SourceType, Status, Trust


@dataclass(frozen=True)
class Standing:
    authority: Authority
    trust: Trust
    status: Status


_ACTIVE_USER = Standing(Authority.USER, Trust.TRUSTED, Status.ACTIVE)
_EXTERNAL = Standing(Authority.EXTERNAL, Trust.UNTRUSTED, Status.QUARANTINED)
_AGENT = Standing(Authority.AGENT, Trust.UNTRUSTED, Status.QUARANTINED)

Policy = Mapping[tuple[Role, SourceType], Standing]

DEFAULT_POLICY: dict[tuple[Role, SourceType], Standing] = {
    (Role.OPERATOR, SourceType.OPERATOR_CONFIG): Standing(Authority.OPERATOR, Trust.VERIFIED, Status.ACTIVE),
    (Role.AGENT, SourceType.USER_STATEMENT): _ACTIVE_USER,
    (Role.AGENT, SourceType.TOOL_RESULT): _EXTERNAL,
    (Role.AGENT, SourceType.WEB_PAGE): _EXTERNAL,
    (Role.AGENT, SourceType.AGENT_INFERENCE): _AGENT,
    (Role.AGENT, SourceType.SUMMARY): _AGENT,
}


def standing_for(policy: Policy, role: Role, source_type: SourceType) -> Standing:
    """The standing a write gets from the table; ``PolicyRefused`` when it has no rule for the pair."""
    standing = policy.get((role, source_type))
    if standing is None:
        raise PolicyRefused(f"role {role.value} may not write {source_type.value} memories")
    return standing


DAY = timedelta(days=1)

# (default TTL, maximum TTL) per kind; configurable through ``Limits``.
DEFAULT_TTLS: dict[Kind, tuple[timedelta, timedelta]] = {
    Kind.PREFERENCE: (365 * DAY, 3 * 365 * DAY),
    Kind.FACT: (365 * DAY, 5 * 365 * DAY),
    Kind.SKILL: (180 * DAY, 2 * 365 * DAY),
    Kind.TASK_SUMMARY: (30 * DAY, 180 * DAY),
    Kind.WORKING_NOTE: (1 * DAY, 7 * DAY),
}


@dataclass(frozen=True)
class Limits:
    """Tunable limits of the write pipeline."""

    max_content_bytes: int = 16 * 1024
    max_purpose_len: int = 64
    max_ref_len: int = 512
    ttls: dict[Kind, tuple[timedelta, timedelta]] | None = None

    def ttl_for(self, kind: Kind) -> tuple[timedelta, timedelta]:
        return (self.ttls or DEFAULT_TTLS)[kind]
