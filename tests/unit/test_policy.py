"""The policy table: who may write what, with which standing; everything else is refused."""

from __future__ import annotations

from datetime import timedelta
from itertools import product

import pytest

from lethe.vault.errors import PolicyRefused
from lethe.vault.memory.policy import DEFAULT_POLICY, DEFAULT_TTLS, Limits, Standing, standing_for
from lethe.vault.model import Authority, Kind, Role, SourceType, Status, Trust

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
