"""Retention as settings (issue 12, item 4). SQLite and PostgreSQL.

TTLs come from ``LETHE_TTL_*`` settings, through the composition root, into the core;
a contradictory set is refused at start with a readable line (exit 2). What agents
inferred or summarised is kept for less than what users said and operators set. Only a
reviewer's confirmation keeps a memory past its source's cap; the writing agent never
extends its own memory (an update keeps or shortens its expiry).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from lethe.api.bootstrap import build
from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from lethe.vault import errors
from lethe.vault.clock import utcnow
from lethe.vault.model import Caller, Provenance, Role, SourceType
from lethe.vault.store import replay
from tests.conftest import agent, page_url, reviewer, write_cmd

DAY = timedelta(days=1)


def operator() -> Caller:
    return Caller("t1", Role.OPERATOR, None, frozenset(), principal="op")


def fact_from(c, source: SourceType, **kw):  # type: ignore[no-untyped-def]
    who = operator() if source is SourceType.OPERATOR_CONFIG else agent()
    sources = ()
    if source is SourceType.SUMMARY:  # a summary cites a live memory (``memory.summaries``)
        sources = (c.memories.write(agent(), write_cmd("the shop opens", kind="fact")).item.id,)
    prov = Provenance(source, "ref-1", sources, url=page_url(source))
    return c.memories.write(who, write_cmd("the shop opens at nine", provenance=prov, kind="fact", **kw)).item


def kept_for(item) -> timedelta:  # type: ignore[no-untyped-def]
    return item.expires_at - item.created_at


def test_agent_inferences_and_summaries_are_kept_for_less_than_user_statements_and_operator_facts(lethe):
    kept = {s: kept_for(fact_from(lethe, s)) for s in SourceType}
    short = max(kept[SourceType.AGENT_INFERENCE], kept[SourceType.SUMMARY])
    long = min(kept[SourceType.USER_STATEMENT], kept[SourceType.OPERATOR_CONFIG])
    assert short < long
    assert kept[SourceType.AGENT_INFERENCE] == 90 * DAY and kept[SourceType.USER_STATEMENT] == 365 * DAY


def test_ttl_settings_reach_the_core(settings, monkeypatch):
    monkeypatch.setenv("LETHE_TTL_AGENT_INFERENCE", "7d")
    monkeypatch.setenv("LETHE_TTL_FACT", "P200D")
    monkeypatch.setenv("LETHE_TTL_USER_STATEMENT", str(100 * 86400))
    configured = Settings(data_dir=settings.data_dir, database_url=settings.database_url)
    c = build(configured, create=True)
    try:
        assert kept_for(fact_from(c, SourceType.AGENT_INFERENCE)) == 7 * DAY
        assert kept_for(fact_from(c, SourceType.USER_STATEMENT)) == 100 * DAY
        assert kept_for(fact_from(c, SourceType.OPERATOR_CONFIG)) == 200 * DAY
        with pytest.raises(errors.InvalidTtl):
            fact_from(c, SourceType.AGENT_INFERENCE, ttl_seconds=8 * 86400)
    finally:
        c.close()


def test_a_write_asking_past_its_source_cap_is_refused(lethe):
    with pytest.raises(errors.InvalidTtl, match="agent_inference"):
        fact_from(lethe, SourceType.AGENT_INFERENCE, ttl_seconds=100 * 86400)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"LETHE_TTL_FACT": "400d", "LETHE_TTL_FACT_MAX": "300d"}, "kind fact: the default (400 days)"),
        ({"LETHE_TTL_SUMMARY": "0s"}, "source summary: a TTL must be positive"),
        ({"LETHE_TTL_WEB_PAGE": "4000d"}, "source web_page: 4000 days is longer than the longest"),
        ({"LETHE_TTL_SKILL": "soon"}, "LETHE_TTL_SKILL:"),
    ],
)
def test_bad_retention_settings_are_refused_at_start_with_a_readable_line(settings, monkeypatch, env, named):
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValidationError):
        Settings()
    runner = CliRunner()
    for args in (["serve"], ["review", "list", "--tenant", "t1"], ["init"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        line = " ".join(result.stderr.split())
        assert "configuration refused" in line and named in line, line
        assert "Traceback" not in result.output
    assert not settings.data_dir.exists()  # nothing was created


def test_a_reviewer_confirmation_keeps_a_memory_past_its_source_cap(lethe):
    c = lethe
    item = fact_from(c, SourceType.AGENT_INFERENCE)
    item = c.review.promote(reviewer(), item.id, item.version).item
    kept = c.retention.confirm(reviewer(), item.id, item.version, 300 * DAY)
    assert kept.version == item.version + 1 and kept.expires_at > item.expires_at + 200 * DAY
    assert kept.content == "the shop opens at nine"
    later = utcnow() + 120 * DAY  # past the source's cap of 90 days
    c.memories.clock = lambda: later
    assert c.memories.sweep_expired() == 0
    assert c.memories.get(agent(), item.id).expires_at == kept.expires_at
    assert replay.check(c.uow.engine).identical


def test_the_writing_agent_never_extends_its_own_memory(lethe):
    c = lethe
    item = fact_from(c, SourceType.USER_STATEMENT, ttl_seconds=10 * 86400)
    updated = c.memories.write(
        agent(),
        write_cmd(
            "the shop opens at ten", kind="fact", id=item.id, expected_version=1, ttl_seconds=300 * 86400
        ),
    ).item
    assert updated.version == 2 and updated.expires_at == item.expires_at  # kept, not extended
    shorter = c.memories.write(
        agent(),
        write_cmd("the shop opens at 10", kind="fact", id=item.id, expected_version=2, ttl_seconds=86400),
    ).item
    assert shorter.expires_at < item.expires_at  # shortening is the writer's right
    with pytest.raises(errors.OutOfScope):
        c.retention.confirm(agent(), item.id, shorter.version, 300 * DAY)
    same_agent_as_reviewer = Caller("t1", Role.REVIEWER, "a1", frozenset(), principal="r")
    with pytest.raises(errors.OutOfScope):
        c.retention.confirm(same_agent_as_reviewer, item.id, shorter.version, 300 * DAY)


def test_a_confirmation_only_extends_an_active_memory_within_its_kinds_maximum(lethe):
    c = lethe
    item = fact_from(c, SourceType.USER_STATEMENT)  # kept 365 days
    with pytest.raises(errors.InvalidTtl, match="only extends"):
        c.retention.confirm(reviewer(), item.id, item.version, 30 * DAY)
    with pytest.raises(errors.InvalidTtl, match="at most"):
        c.retention.confirm(reviewer(), item.id, item.version, 6 * 365 * DAY)  # fact maximum: 5 years
    with pytest.raises(errors.VersionConflict):
        c.retention.confirm(reviewer(), item.id, item.version + 1, 400 * DAY)
    quarantined = fact_from(c, SourceType.WEB_PAGE)
    with pytest.raises(errors.VersionConflict, match="quarantined"):
        c.retention.confirm(reviewer(), quarantined.id, quarantined.version, 400 * DAY)
    with pytest.raises(errors.NotFound):
        c.retention.confirm(
            Caller("t2", Role.REVIEWER, None, frozenset(), principal="r"), item.id, 1, 400 * DAY
        )
