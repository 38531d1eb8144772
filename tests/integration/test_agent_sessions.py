"""Tainted sessions in the core (SQLite and PostgreSQL): a search that serves an untrusted item
taints its session (and replay rebuilds the taint a write recorded), and a session's taint costs a
write no round trip of its own
(``vault.memory.agent_sessions``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lethe.api.bootstrap import Container
from lethe.vault.memory.service import MemoryService
from lethe.vault.model import Authority, Provenance, Role, SearchQuery, SourceType, Status, Trust
from lethe.vault.policy import DEFAULT_POLICY, Standing
from lethe.vault.store import db, replay
from tests.conftest import agent, write_cmd
from tests.integration.test_postgres_round_trips import round_trips, wire

# A deployment whose policy serves tool results at once, untrusted: they reach searches.
SERVED_UNTRUSTED = {
    **DEFAULT_POLICY,
    (Role.AGENT, SourceType.TOOL_RESULT): Standing(Authority.EXTERNAL, Trust.UNTRUSTED, Status.ACTIVE),
}


def test_a_search_that_serves_an_untrusted_item_taints_its_session(lethe: Container) -> None:
    c = lethe
    memories = MemoryService(c.uow, c.keyring, c.pseudonyms, policy=SERVED_UNTRUSTED, log=c.log)
    tool = write_cmd(
        "the crm says Alice moved to Lyon", provenance=Provenance(SourceType.TOOL_RESULT, "tool:crm")
    )
    untrusted = memories.write(agent(), tool).item
    assert untrusted.status is Status.ACTIVE and untrusted.trust is Trust.UNTRUSTED
    served = c.search.search(agent(), SearchQuery("Lyon", "support"), session_id="conv-s")
    assert [i.id for i in served.items] == [untrusted.id]
    later = memories.write(agent(), write_cmd("Alice prefers the window seat"), session_id="conv-s").item
    assert later.status is Status.QUARANTINED and later.trust is Trust.UNTRUSTED
    assert later.session_taint is not None and later.session_taint.cause == "served_untrusted"
    assert later.session_taint.memory_id == untrusted.id
    # Control: a session whose search served only trusted items stays clean.
    bob = memories.write(agent(), write_cmd("Bob prefers aisle seats", subject="bob@example.com")).item
    query = SearchQuery("aisle", "support", subject_id="bob@example.com")
    assert [i.id for i in c.search.search(agent(), query, session_id="conv-t").items] == [bob.id]
    clean = memories.write(agent(), write_cmd("Alice prefers tea"), session_id="conv-t").item
    assert clean.status is Status.ACTIVE and clean.session_taint is None
    # The taint a write recorded is in its event: replay rebuilds it.
    report = replay.check(c.uow.engine)
    assert report.identical, report


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_session_costs_a_write_no_round_trip(lethe: Container, tmp_path: Path) -> None:
    c = lethe
    c.memories.write(agent(), write_cmd("Alice likes tea"))  # the subject's key is made once
    page = write_cmd(
        "a page",
        provenance=Provenance(SourceType.WEB_PAGE, "https://evil.example", url="https://evil.example"),
    )
    begin = f'"{db._locked_begin(None, "t1")}"'  # the tenant's setting goes with BEGIN and the lock
    for i, (cmd, session) in enumerate(
        [
            (write_cmd("Alice likes green tea"), None),  # no session: as before
            (write_cmd("Alice likes black tea"), "conv-p"),  # an untainted session: read with the checks
            (page, "conv-p"),  # tainting it: the taint sent with the inserts
            (write_cmd("Alice likes white tea"), "conv-p"),  # tainted: extended with the inserts
        ]
    ):
        with wire(c.uow.tenant_engine, tmp_path / f"trace{i}") as statements:
            c.memories.write(agent(), cmd, session_id=session)
        assert round_trips(tmp_path / f"trace{i}") == [begin, "Sync", "Sync", '"COMMIT"'], statements
        assert ("agent_sessions" in statements[1]) == (session is not None)
        assert sum("INTO agent_sessions" in s for s in statements) == (i >= 2)
