"""Operator memories and ranking by standing (issue 12, item 3). SQLite and PostgreSQL.

An ``operator`` credential writes operator memories (authority operator, trust
verified); every agent of the tenant reads those of a purpose its credential covers, no
other purpose or tenant does, and no agent can overwrite them. A search ranks by
relevance first, then standing: a verified operator fact outranks a contradicting agent
inference of equal relevance, however confident and recent the inference.
"""

from __future__ import annotations

import pytest

from lethe.vault import errors
from lethe.vault.memory.ranking import WEIGHTS
from lethe.vault.model import Caller, Provenance, Role, SearchQuery, SourceType
from tests.conftest import agent, reviewer, write_cmd

ORG = "org:acme"


def operator(tenant: str = "t1", purposes: tuple[str, ...] = ()) -> Caller:
    return Caller(tenant, Role.OPERATOR, None, frozenset(purposes), principal="op-token")


def operator_fact(c, content, purpose="support", tenant="t1", confidence=0.5):  # type: ignore[no-untyped-def]
    prov = Provenance(SourceType.OPERATOR_CONFIG, "deploy/config.yaml")
    cmd = write_cmd(
        content, subject=ORG, provenance=prov, purpose=purpose, kind="fact", confidence=confidence
    )
    return c.memories.write(operator(tenant), cmd).item


def inference(c, content, who=None, confidence=1.0):  # type: ignore[no-untyped-def]
    """An agent inference a reviewer promoted: active, trust verified, authority agent."""
    who = who or agent()
    cmd = write_cmd(
        content, subject=ORG, source=SourceType.AGENT_INFERENCE, kind="fact", confidence=confidence
    )
    item = c.memories.write(who, cmd).item
    return c.review.promote(reviewer(), item.id, item.version).item


def found(c, caller, query, purpose="support"):  # type: ignore[no-untyped-def]
    return c.search.search(caller, SearchQuery(query, purpose, limit=20)).items


@pytest.mark.parametrize("agent_confidence", [1.0, 0.9])
def test_an_operator_fact_outranks_a_contradicting_low_authority_agent_inference_of_equal_relevance(
    lethe, agent_confidence
):
    c = lethe
    fact = operator_fact(c, "refunds are allowed within 30 days", confidence=0.5)
    guess = inference(c, "refunds are allowed within 90 days", confidence=agent_confidence)  # newer, surer
    items = found(c, agent(), "refunds allowed within days")
    assert [i.id for i in items] == [fact.id, guess.id]
    top, second = (i.score for i in items)
    assert top["lexical"] == second["lexical"] == 1.0  # equal relevance
    assert second["confidence"] > top["confidence"] and second["recency"] >= top["recency"]
    assert top["authority"] > second["authority"] and top["total"] > second["total"]


def test_relevance_still_leads_standing(lethe):
    c = lethe
    fact = operator_fact(c, "refunds need a receipt")
    mine = c.memories.write(
        agent(), write_cmd("alice asked about refunds for damaged parcels", subject=ORG)
    ).item
    items = found(c, agent(), "refunds damaged parcels")
    assert [i.id for i in items] == [mine.id, fact.id]


def test_the_weights_keep_an_operator_above_any_agent_claim_of_equal_relevance():
    # The authority gap times its weight must exceed all confidence and recency can add.
    assert WEIGHTS["authority"] * (1.0 - 0.4) > WEIGHTS["confidence"] + WEIGHTS["recency"]


def test_operator_memories_are_read_by_every_agent_of_their_purpose_and_no_one_else(lethe):
    c = lethe
    support = operator_fact(c, "greet customers by first name")
    billing = operator_fact(c, "invoices go out on the first", purpose="billing")
    other_tenant = operator_fact(c, "greet customers formally", tenant="t2")
    a1, a2 = agent(agent_id="a1"), agent(agent_id="a2")
    a3 = agent(agent_id="a3", purposes=("billing",))
    t2 = agent(tenant="t2", agent_id="a1")
    assert [i.id for i in found(c, a1, "greet customers")] == [support.id]
    assert [i.id for i in found(c, a2, "greet customers")] == [support.id]
    assert found(c, a3, "greet customers", purpose="billing") == []
    assert [i.id for i in found(c, a3, "invoices", purpose="billing")] == [billing.id]
    assert [i.id for i in found(c, t2, "greet customers")] == [other_tenant.id]
    assert c.memories.get(a2, support.id).content == "greet customers by first name"
    for caller, memory_id in ((a3, support.id), (t2, support.id), (a1, billing.id)):
        with pytest.raises(errors.NotFound):
            c.memories.get(caller, memory_id)


def test_agent_memories_stay_private_to_their_agent(lethe):
    c = lethe
    mine = c.memories.write(agent(agent_id="a1"), write_cmd("alice likes tea")).item
    assert found(c, agent(agent_id="a2"), "tea") == []
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(agent_id="a2"), mine.id)


@pytest.mark.parametrize("role", [Role.AGENT, Role.REVIEWER, Role.PRIVACY_OFFICER, Role.AUDITOR, Role.ADMIN])
def test_only_an_operator_credential_writes_operator_memories(lethe, role):
    caller = agent() if role is Role.AGENT else Caller("t1", role, None, frozenset(), principal="x")
    cmd = write_cmd("house rule", subject=ORG, source=SourceType.OPERATOR_CONFIG)
    with pytest.raises(errors.PolicyRefused):
        lethe.memories.write(caller, cmd)


def test_an_operator_writes_only_operator_config(lethe):
    with pytest.raises(errors.PolicyRefused):
        lethe.memories.write(operator(), write_cmd("alice likes tea", source=SourceType.USER_STATEMENT))


def test_an_operator_memory_has_operator_standing_and_is_active_at_once(lethe):
    fact = operator_fact(lethe, "greet customers by first name")
    assert (fact.authority.value, fact.trust.value, fact.status.value) == ("operator", "verified", "active")
    assert fact.agent_id == "operator:op-token"


def test_no_agent_can_update_or_supersede_an_operator_memory(lethe):
    c = lethe
    fact = operator_fact(c, "refunds are allowed within 30 days")
    prov = Provenance(SourceType.USER_STATEMENT, "s/1")
    with pytest.raises(errors.NotFound):
        c.memories.write(
            agent(), write_cmd("90 days", subject=ORG, provenance=prov, id=fact.id, expected_version=1)
        )
    with pytest.raises(errors.NotFound):
        c.memories.write(agent(), write_cmd("90 days", subject=ORG, provenance=prov, supersedes_id=fact.id))
    assert c.memories.get(agent(), fact.id).content == "refunds are allowed within 30 days"


def test_an_operator_limited_to_a_purpose_cannot_write_another(lethe):
    prov = Provenance(SourceType.OPERATOR_CONFIG, "deploy/config.yaml")
    with pytest.raises(errors.OutOfScope):
        lethe.memories.write(
            operator(purposes=("support",)), write_cmd("x", provenance=prov, purpose="billing")
        )
