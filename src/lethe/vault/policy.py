"""Who may write what, and with which standing: the content never assigns its own trust.

The policy table maps (caller role, source type) to the authority, trust and initial
status of a write. A pair missing from the table is refused. Retention lives here too:
each memory kind has a default and a maximum TTL, and each source type a cap on how long a
write from it is kept (shorter for what agents inferred or summarised than for what users
said or operators set); a reviewer's confirmation (``memory.retention``) may keep a
memory past its source's cap, up to its kind's maximum. The server passes all of them in
from its settings (``LETHE_TTL_<KIND>``); ``Limits.check`` refuses a contradictory set.

Trust comes from the credential, never from the writer's word: a token names the source
types it may assert (``Caller.source_types``, minted with it), and ``admit_source`` refuses
any other before the table is read. A token minted without them may assert whatever its
role may write here (``role_source_types``), so tokens older than the rule keep working.

Exceptions: ``PolicyRefused`` (403) from ``standing_for``: the table has no rule for the pair;
``SourceTypeRefused`` (403, a ``PolicyRefused``) from ``admit_source``: the credential may not
assert the source type. Both name the source types the caller may assert.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from lethe.vault.errors import InvalidRetention, PolicyRefused, SourceTypeRefused
from lethe.vault.model import Authority, Caller, Kind, Role, SourceType, Status, Trust


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
        raise PolicyRefused(
            f"role {role.value} may not write {source_type.value} memories; "
            f"{_may_assert(role_source_types(policy, role))}"
        )
    return standing


def role_source_types(policy: Policy, role: Role) -> tuple[SourceType, ...]:
    """What a role may write at all (the table's rows for it): a token's default and its bound."""
    return tuple(s for s in SourceType if (role, s) in policy)


def allowed_source_types(policy: Policy, caller: Caller) -> tuple[SourceType, ...]:
    """What this caller may assert: its credential's list, or its role's default without one."""
    if caller.source_types is None:
        return role_source_types(policy, caller.role)
    return tuple(s for s in SourceType if s in caller.source_types)


def admit_source(policy: Policy, caller: Caller, source_type: SourceType) -> Standing:
    """The standing of a write of ``source_type`` by ``caller``: ``SourceTypeRefused`` unless its
    credential may assert it, then the table (``standing_for``). A set-membership test: the
    credential's list rides in the ``Caller``, read with the token, so no statement is added."""
    if caller.source_types is not None and source_type not in caller.source_types:
        raise SourceTypeRefused(
            f"this token may not assert source type {source_type.value}; "
            f"{_may_assert(allowed_source_types(policy, caller))}"
        )
    return standing_for(policy, caller.role, source_type)


def _may_assert(types: tuple[SourceType, ...]) -> str:
    return f"it may assert: {', '.join(types)}" if types else "it may assert none"


DAY = timedelta(days=1)

# (default TTL, maximum TTL) per kind; configurable through ``Limits``.
DEFAULT_TTLS: dict[Kind, tuple[timedelta, timedelta]] = {
    Kind.PREFERENCE: (365 * DAY, 3 * 365 * DAY),
    Kind.FACT: (365 * DAY, 5 * 365 * DAY),
    Kind.SKILL: (180 * DAY, 2 * 365 * DAY),
    Kind.TASK_SUMMARY: (30 * DAY, 180 * DAY),
    Kind.WORKING_NOTE: (1 * DAY, 7 * DAY),
}


# The longest a write from each source is kept (unless a reviewer confirms it): agents'
# inferences and summaries go first, what users said and operators set lasts longest.
DEFAULT_SOURCE_TTLS: dict[SourceType, timedelta] = {
    SourceType.OPERATOR_CONFIG: 5 * 365 * DAY,
    SourceType.USER_STATEMENT: 3 * 365 * DAY,
    SourceType.TOOL_RESULT: 180 * DAY,
    SourceType.WEB_PAGE: 180 * DAY,
    SourceType.AGENT_INFERENCE: 90 * DAY,
    SourceType.SUMMARY: 90 * DAY,
}
LONGEST_TTL = 10 * 365 * DAY  # no setting may exceed it (the HTTP schema's bound too)


@dataclass(frozen=True)
class Limits:
    """Tunable limits of the write pipeline."""

    max_content_bytes: int = 16 * 1024
    max_purpose_len: int = 64
    max_ref_len: int = 512
    ttls: dict[Kind, tuple[timedelta, timedelta]] | None = None  # per kind: (default, maximum)
    source_ttls: dict[SourceType, timedelta] | None = None  # per source: the cap at write time

    def ttl_for(self, kind: Kind) -> tuple[timedelta, timedelta]:
        """The kind's (default, maximum) TTL; a reviewer's confirmation is bounded by the maximum."""
        return {**DEFAULT_TTLS, **(self.ttls or {})}[kind]

    def source_cap(self, source: SourceType) -> timedelta:
        return {**DEFAULT_SOURCE_TTLS, **(self.source_ttls or {})}[source]

    def window(self, kind: Kind, source: SourceType) -> tuple[timedelta, timedelta]:
        """The (default, maximum) TTL of a write of this kind from this source."""
        default, maximum = self.ttl_for(kind)
        cap = self.source_cap(source)
        return min(default, cap), min(maximum, cap)

    def check(self) -> Limits:
        """``InvalidRetention`` naming every contradiction: a TTL not positive, longer than ten
        years, or a kind's default longer than its maximum."""
        problems = []
        for kind in Kind:
            default, maximum = self.ttl_for(kind)
            for what, ttl in (
                (f"kind {kind.value} default", default),
                (f"kind {kind.value} maximum", maximum),
            ):
                problems += _bad(what, ttl)
            if default > maximum:
                problems.append(
                    f"kind {kind.value}: the default ({_days(default)}) is longer "
                    f"than the maximum ({_days(maximum)})"
                )
        for source in SourceType:
            problems += _bad(f"source {source.value}", self.source_cap(source))
        if problems:
            raise InvalidRetention("; ".join(problems))
        return self


def _days(ttl: timedelta) -> str:
    return f"{ttl.total_seconds() / 86400:g} days"


def _bad(what: str, ttl: timedelta) -> list[str]:
    if ttl <= timedelta(0):
        return [f"{what}: a TTL must be positive"]
    if ttl > LONGEST_TTL:
        return [f"{what}: {_days(ttl)} is longer than the longest allowed ({_days(LONGEST_TTL)})"]
    return []
