"""A token a process authenticated before is recalled from memory, without a lookup; the
search or write that serves it reads its revocation with its own first statement, so a token
revoked by another process is refused by its next search or write, on SQLite and PostgreSQL
alike, and the refused write writes nothing."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.vault.access.known_tokens import KnownTokens
from lethe.vault.errors import Unauthenticated
from lethe.vault.model import Role, SearchQuery
from lethe.vault.store.tables import subject_keys
from tests.children import lethe_command, lethe_env
from tests.conftest import event_count, write_cmd


def _revoke_in_another_process(settings: Settings, token_id: str) -> None:
    env = lethe_env(settings.data_dir)
    if settings.database_url:
        env["LETHE_DATABASE_URL"] = settings.database_url
    r = subprocess.run(
        [*lethe_command(), "token", "revoke", token_id], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr


@pytest.fixture(params=["kept scopes", "no vector cache"])
def node(request: pytest.FixtureRequest, settings: Settings) -> Container:
    """A store's process; without a vector cache a search keeps no scope and has no scope
    token to read, so the revocation is read by a statement of its own."""
    if request.param == "no vector cache":
        settings = settings.model_copy(update={"vector_cache_entries": 0})
    c = build(settings, create=True)
    request.addfinalizer(c.close)
    return c


@pytest.mark.parametrize("query", ["green tea", "a"], ids=["query terms", "no query terms"])
def test_a_recalled_token_revoked_by_another_process_is_refused_by_the_next_search(
    node: Container, settings: Settings, query: str
) -> None:
    token, info = node.tokens.create(Role.AGENT, "t1", agent_id="a1", purposes=["support"])
    caller = node.tokens.authenticate(token)
    node.memories.write(caller, write_cmd("Alice likes green tea"))
    recalled = node.tokens.recall(token)
    assert recalled == caller
    q = SearchQuery(query, "support")
    assert len(node.search.search(recalled, q, confirm_token=True).items) == 1

    _revoke_in_another_process(settings, info.id)

    assert node.tokens.recall(token) == caller  # memory cannot know: the search must read it
    with pytest.raises(Unauthenticated):
        node.search.search(recalled, q, confirm_token=True)
    # The refusal is the read's: the same search without it still answers.
    assert len(node.search.search(recalled, q).items) == 1
    with pytest.raises(Unauthenticated):
        node.tokens.authenticate(token)


def _keys(c: Container) -> int:
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(subject_keys)).scalar_one()


@pytest.mark.parametrize("subject", ["alice", "bob"], ids=["a subject whose key is cached", "a new subject"])
def test_a_recalled_token_revoked_by_another_process_is_refused_by_the_next_write_which_writes_nothing(
    node: Container, settings: Settings, subject: str
) -> None:
    token, info = node.tokens.create(Role.AGENT, "t1", agent_id="a1", purposes=["support"])
    recalled = node.tokens.authenticate(token)
    first = write_cmd("Alice likes green tea", subject="alice", key="first")
    assert node.memories.write(recalled, first, confirm_token=True).created

    _revoke_in_another_process(settings, info.id)

    events, keys = event_count(node), _keys(node)
    for cmd in (write_cmd("Likes oolong too", subject=subject), first):  # a new write, and a retry
        with pytest.raises(Unauthenticated):
            node.memories.write(recalled, cmd, confirm_token=True)
    assert (event_count(node), _keys(node)) == (events, keys)  # no event, no key made for bob
    # The refusal is the read's: the same write without it goes through.
    assert node.memories.write(recalled, write_cmd("Likes oolong too", subject=subject)).created


def test_only_tokens_authenticated_here_are_recalled_and_none_past_its_expiry(lethe: Container) -> None:
    token, _ = lethe.tokens.create(
        Role.AGENT, "t1", agent_id="a1", purposes=["support"], ttl=timedelta(hours=1)
    )
    other, _ = lethe.tokens.create(Role.AGENT, "t1", agent_id="a2", purposes=["support"])
    assert lethe.tokens.recall(token) is None  # minted here, never presented
    caller = lethe.tokens.authenticate(token)
    assert lethe.tokens.recall(token) == caller
    assert lethe.tokens.recall(other) is None
    assert lethe.tokens.recall("not-a-token") is None and lethe.tokens.recall(None) is None
    lethe.tokens.forget(token)  # a read found it revoked: it is looked up again
    assert lethe.tokens.recall(token) is None
    assert lethe.tokens.authenticate(token) == caller
    later = lethe.tokens.clock() + timedelta(hours=1, seconds=1)
    lethe.tokens.clock = lambda: later
    assert lethe.tokens.recall(token) is None  # expired: no read can make it valid again


def test_a_process_remembers_a_bounded_number_of_tokens_the_oldest_going_first() -> None:
    known = KnownTokens(capacity=3)
    for i in range(5):
        known.remember(f"digest-{i}", i)
    assert len(known) == 3
    assert [known.get(f"digest-{i}") for i in range(5)] == [None, None, 2, 3, 4]
    known.remember("digest-2", 2)  # remembered again: now the newest
    known.remember("digest-5", 5)
    assert known.get("digest-3") is None and known.get("digest-2") == 2
    none = KnownTokens(capacity=0)
    none.remember("digest-0", 0)
    assert none.get("digest-0") is None
