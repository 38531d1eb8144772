"""The core refuses out-of-range input itself, so library callers get the same clear
errors as HTTP clients and nothing past the store's or the clock's range reaches them."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from lethe.vault import errors
from lethe.vault.memory.search import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from lethe.vault.memory.validation import MAX_VERSION
from lethe.vault.model import Caller, Role, SearchQuery, SourceType
from tests.conftest import agent, event_count, reviewer, write_cmd


@pytest.mark.parametrize("version", [MAX_VERSION + 1, 2**53, 10**30, -1, True, "1", 1.0])
def test_an_expected_version_outside_the_store_range_is_an_invalid_command(lethe, version):
    item = lethe.memories.write(agent(), write_cmd("v1")).item
    before = event_count(lethe)
    for cmd in (write_cmd(expected_version=version), write_cmd(id=item.id, expected_version=version)):
        with pytest.raises(errors.InvalidCommand) as info:
            lethe.memories.write(agent(), cmd)
        assert "expected_version" in info.value.detail and str(MAX_VERSION) in info.value.detail
    assert event_count(lethe) == before


def test_a_promotion_with_an_expected_version_outside_the_store_range_is_an_invalid_command(lethe):
    item = lethe.memories.write(agent(), write_cmd(source=SourceType.TOOL_RESULT)).item
    with pytest.raises(errors.InvalidCommand):
        lethe.review.promote(reviewer(), item.id, 2**53)
    assert lethe.review.promote(reviewer(), item.id, item.version).item.version == item.version + 1


@pytest.mark.parametrize("ttl", [10**14, 10**20, float("inf"), float("nan"), True, "10"])
def test_a_ttl_the_clock_cannot_hold_is_an_invalid_ttl_not_an_overflow(lethe, ttl):
    before = event_count(lethe)
    with pytest.raises(errors.InvalidTtl):
        lethe.memories.write(agent(), write_cmd(kind="fact", ttl_seconds=ttl))
    assert event_count(lethe) == before


@pytest.mark.parametrize(
    "expires_at",
    [
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(-timedelta(hours=23, minutes=59))),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    ],
)
def test_an_expiry_at_the_edge_of_the_calendar_is_an_invalid_ttl(lethe, expires_at):
    with pytest.raises(errors.InvalidTtl):
        lethe.memories.write(agent(), write_cmd(kind="fact", expires_at=expires_at))


def test_a_query_of_more_distinct_terms_than_the_limit_is_an_invalid_command_naming_the_limit(lethe):
    lethe.memories.write(agent(), write_cmd("w0 w1 w2"))
    words = [f"w{i}" for i in range(MAX_QUERY_TERMS + 1)]
    # Repeats and one-letter words are not terms: exactly the limit is fine.
    at_limit = " ".join(words[:MAX_QUERY_TERMS] * 3 + ["a", "b"])
    assert len(lethe.search.search(agent(), SearchQuery(at_limit, "support")).items) == 1
    with pytest.raises(errors.InvalidCommand) as info:
        lethe.search.search(agent(), SearchQuery(" ".join(words), "support"))
    assert str(MAX_QUERY_TERMS) in info.value.detail and "w0" not in info.value.detail


def test_a_query_longer_than_the_limit_is_an_invalid_command_naming_the_limit(lethe):
    with pytest.raises(errors.InvalidCommand) as info:
        lethe.search.search(agent(), SearchQuery("tea " * (MAX_QUERY_CHARS // 4 + 1), "support"))
    assert str(MAX_QUERY_CHARS) in info.value.detail and "tea" not in info.value.detail


def test_superseding_an_item_in_a_purpose_the_caller_lacks_is_not_found(lethe):
    both = agent(purposes=("support", "billing"))
    billing = lethe.memories.write(both, write_cmd("billing note", purpose="billing")).item
    before = event_count(lethe)
    with pytest.raises(errors.NotFound) as aimed:
        lethe.memories.write(agent(), write_cmd("correction", supersedes_id=billing.id))
    with pytest.raises(errors.NotFound) as unknown:
        lethe.memories.write(
            agent(), write_cmd("correction", supersedes_id="00000000-0000-4000-8000-000000000000")
        )
    assert aimed.value.detail == unknown.value.detail
    # A caller without purpose restrictions may use every purpose: the purpose rule applies.
    anything = Caller("t1", Role.AGENT, "a1", frozenset(), principal="tok-any")
    with pytest.raises(errors.InvalidCommand):
        lethe.memories.write(anything, dataclasses.replace(write_cmd("x"), supersedes_id=billing.id))
    assert event_count(lethe) == before
