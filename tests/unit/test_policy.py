"""The policy table: who may write what, with which standing; everything else is refused."""

from __future__ import annotations

from datetime import timedelta
from itertools import product

import pytest

from lethe.vault.errors import PolicyRefused, SourceTypeRefused
from lethe.vault.model import Authority, Caller, Kind, Role, SourceType, Status, Trust
from lethe.vault.policy import (
    DEFAULT_POLICY,
    DEFAULT_TTLS,
    Limits,
    Standing,
    admit_source,
    allowed_source_types,
    standing_for,
)

# The table of docs (DESIGN.md, "Data model"), written out: a change to the code must change this too.
EXPECTED = {
    (Role.OPERATOR, SourceType.OPERATOR_CONFIG): (Authority.OPERATOR, Trust.VERIFIED, Status.ACTIVE),
    (Role.AGENT, SourceType.USER_STATEMENT): (Authority.USER, Trust.TRUSTED, Status.ACTIVE),
    (Role.AGENT, SourceType.TOOL_RESULT): (Authority.EXTERNAL, Trust.UNTRUSTED, Status.QUARANTINED),
    (Role.AGENT, SourceType.WEB_PAGE): (Authority.EXTERNAL, Trust.UNTRUSTED, Status.QUARANTINED),
    (Role.AGENT, SourceType.AGENT_INFERENCE): (Authority.AGENT, Trust.UNTRUSTED, Status.QUARANTINED),
    (Role.AGENT, SourceType.SUMMARY): (Authority.AGENT, Trust.UNTRUSTED, Status.QUARANTINED),
}


@pytest.mark.parametrize("pair", sorted(EXPECTED))
def test_the_default_table_gives_each_allowed_pair_its_standing(pair):
    authority, trust, status = EXPECTED[pair]
    assert standing_for(DEFAULT_POLICY, *pair) == Standing(authority, trust, status)


REFUSED = sorted(set(product(Role, SourceType)) - set(EXPECTED))


@pytest.mark.parametrize("role, source", REFUSED)
def test_every_other_role_and_source_is_refused(role, source):
    with pytest.raises(PolicyRefused, match=f"role {role.value} may not write {source.value}"):
        standing_for(DEFAULT_POLICY, role, source)


def test_a_role_refusal_names_what_the_role_may_write():
    with pytest.raises(PolicyRefused, match="it may assert: user_statement, tool_result, web_page,"):
        standing_for(DEFAULT_POLICY, Role.AGENT, SourceType.OPERATOR_CONFIG)


def _agent(source_types: frozenset[SourceType] | None) -> Caller:
    return Caller("t1", Role.AGENT, "a1", frozenset({"support"}), "tok", source_types)


def test_a_credential_asserts_only_its_source_types_and_the_refusal_names_them():
    caller = _agent(frozenset({SourceType.AGENT_INFERENCE, SourceType.TOOL_RESULT}))
    with pytest.raises(SourceTypeRefused) as refused:
        admit_source(DEFAULT_POLICY, caller, SourceType.USER_STATEMENT)
    assert refused.value.status == 403 and isinstance(refused.value, PolicyRefused)
    assert refused.value.detail == (
        "this token may not assert source type user_statement; it may assert: tool_result, agent_inference"
    )
    # the positive control: a type the credential names gets the table's standing
    assert admit_source(DEFAULT_POLICY, caller, SourceType.TOOL_RESULT).status is Status.QUARANTINED
    trusted = _agent(frozenset({SourceType.USER_STATEMENT}))
    assert admit_source(DEFAULT_POLICY, trusted, SourceType.USER_STATEMENT).status is Status.ACTIVE


def test_a_credential_without_source_types_keeps_its_roles_default():
    legacy = _agent(None)
    assert allowed_source_types(DEFAULT_POLICY, legacy) == tuple(
        s for s in SourceType if s.value != "operator_config"
    )
    for source in allowed_source_types(DEFAULT_POLICY, legacy):
        assert admit_source(DEFAULT_POLICY, legacy, source) == standing_for(
            DEFAULT_POLICY, Role.AGENT, source
        )
    with pytest.raises(PolicyRefused):
        admit_source(DEFAULT_POLICY, legacy, SourceType.OPERATOR_CONFIG)
    operator = Caller("t1", Role.OPERATOR, principal="op")
    assert allowed_source_types(DEFAULT_POLICY, operator) == (SourceType.OPERATOR_CONFIG,)


def test_the_table_has_no_rule_beyond_those_of_the_design():
    assert set(DEFAULT_POLICY) == set(EXPECTED)


def test_untrusted_sources_are_never_active():
    for (_, source), standing in DEFAULT_POLICY.items():
        if standing.trust is Trust.UNTRUSTED:
            assert standing.status is Status.QUARANTINED, source


def test_a_custom_table_replaces_the_default_entirely():
    only = {(Role.REVIEWER, SourceType.SUMMARY): Standing(Authority.USER, Trust.TRUSTED, Status.ACTIVE)}
    assert standing_for(only, Role.REVIEWER, SourceType.SUMMARY).status is Status.ACTIVE
    with pytest.raises(PolicyRefused):
        standing_for(only, Role.AGENT, SourceType.USER_STATEMENT)


def test_every_kind_has_a_default_ttl_within_its_maximum():
    assert set(DEFAULT_TTLS) == set(Kind)
    for kind in Kind:
        default, maximum = Limits().ttl_for(kind)
        assert timedelta(0) < default <= maximum


def test_configured_ttls_replace_the_defaults():
    short = {k: (timedelta(hours=1), timedelta(hours=2)) for k in Kind}
    assert Limits(ttls=short).ttl_for(Kind.FACT) == (timedelta(hours=1), timedelta(hours=2))
