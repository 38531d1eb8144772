"""Isolation as a property, rerun through the agent surfaces: the MCP tools (Streamable
HTTP) and ``LetheStore``. Writers in random tenants, agents and purposes write; a random
caller's recall, get and list see exactly what its token's scope holds, nothing more.
The same property the HTTP API and the core are tested for (tests/api/test_scope.py,
tests/integration/test_scope_isolation.py), on a real ``lethe serve`` over SQLite and
PostgreSQL. Tokens are minted on the server's store, as ``lethe token create`` does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from lethe.api.bootstrap import build
from lethe.api.settings import Settings
from lethe.client import LetheClient
from lethe.integrations.langgraph import LetheStore
from tests.api.conftest import Served, serve_with_tokens
from tests.api.mcp_clients import call, over_http, text_of

pytestmark = pytest.mark.slow

TENANTS, AGENTS, PURPOSES, SUBJECTS = ["t1", "t2"], ["a1", "a2"], ["p1", "p2"], ["s1", "s2"]
WORDS = ["tea", "coffee", "paris", "allergy"]
ID_KEY = "scope-property-id-key"

writes = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.sampled_from(AGENTS),
        st.sampled_from(PURPOSES),
        st.sampled_from(SUBJECTS),
        st.sampled_from(["k1", "k2"]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
    ),
    min_size=1,
    max_size=6,
)
callers = st.tuples(
    st.sampled_from(TENANTS), st.sampled_from(AGENTS), st.sets(st.sampled_from(PURPOSES), min_size=1)
)
# Each example is a few dozen HTTP requests: no shrinking, so a failure reports in seconds, not minutes.
EXAMPLES = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
CASES = given(
    writes=writes, caller=callers, subject=st.none() | st.sampled_from(SUBJECTS), query=st.sampled_from(WORDS)
)


def with_own(writes: list, caller: tuple) -> list:  # type: ignore[type-arg]
    """The random writes plus one in the caller's own scope per purpose and subject, so every
    example has something to find and a subject filter always has something to leave out."""
    tenant, agent, purposes = caller
    return [*writes, *((tenant, agent, p, s, "k3", ["tea"]) for p in sorted(purposes) for s in SUBJECTS)]


def in_scope(scope: tuple[str, str, str], caller: tuple[str, str, str], subject: str | None, s: str) -> bool:
    return scope == caller and subject in (None, s)


class Minter:
    """Mints tokens on the server's store, per example run (tenants suffixed by the run id)."""

    def __init__(self, served: Served) -> None:
        env = served.server.env
        self.container = build(
            Settings(data_dir=Path(env["LETHE_DATA_DIR"]), database_url=env.get("LETHE_DATABASE_URL"))
        )
        self.tokens = self.container.tokens
        self.cache: dict[tuple[str, str, tuple[str, ...]], str] = {}

    def agent(self, tenant: str, agent: str, purposes: tuple[str, ...]) -> str:
        spec = (tenant, agent, tuple(sorted(purposes)))
        if spec not in self.cache:
            self.cache[spec] = self.tokens.create("agent", tenant, agent, spec[2])[0]
        return self.cache[spec]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # A user channel: the MCP writes below are active at once, so recall can find them.
    env, url = {"LETHE_MCP_USER_CHANNEL": "user_statement"}, None
    if request.param == "postgres":
        pg = request.getfixturevalue("postgres")
        url = pg.create()
        env["LETHE_DATABASE_URL"] = url
    s = serve_with_tokens(tmp_path_factory.mktemp(f"scope-{request.param}"), env)
    yield s
    s.server.stop()
    if url is not None:
        pg.drop(url)


@pytest.fixture(scope="module")
def minter(served: Served) -> Iterator[Minter]:
    m = Minter(served)
    yield m
    m.container.close()


@EXAMPLES
@CASES
def test_no_mcp_recall_or_get_crosses_the_tokens_scope(served, minter, writes, caller, subject, query):  # type: ignore[no-untyped-def]
    run = uuid.uuid4().hex[:8]
    writes = with_own(writes, caller)

    async def scenario() -> None:
        written = []
        for tenant, agent, purpose, subj, _, words in writes:
            token = minter.agent(f"{tenant}-{run}", agent, (purpose,))
            async with over_http(served.url, token) as mcp:
                item = await call(
                    mcp,
                    "remember",
                    subject_id=f"{subj}-{run}",
                    kind="fact",
                    content=" ".join(words),
                    provenance={"source_ref": "property"},
                )
            written.append((item["id"], tenant, agent, purpose, subj))
        tenant, agent, purposes = caller
        token = minter.agent(f"{tenant}-{run}", agent, tuple(purposes))
        async with over_http(served.url, token) as mcp:
            for purpose in purposes:
                args = {"query": query, "purpose": purpose, "limit": 100, "token_budget": 100_000}
                if subject:
                    args["subject_id"] = f"{subject}-{run}"
                found = await call(mcp, "recall", **args)
                me = (tenant, agent, purpose)
                expected = {i for i, t, a, p, s in written if in_scope((t, a, p), me, subject, s)}
                assert {i["id"] for i in found["items"]} == expected
            for memory_id, t, a, p, _ in written:
                result = await mcp.call_tool("get_memory", {"memory_id": memory_id})
                readable = (t, a) == (tenant, agent) and p in purposes
                assert result.is_error is (not readable), text_of(result)
                if not readable:
                    assert "404 Not found" in text_of(result)
            for purpose in set(PURPOSES) - purposes:
                refused = await mcp.call_tool("recall", {"query": query, "purpose": purpose})
                assert refused.is_error and "403" in text_of(refused)

    asyncio.run(scenario())


@EXAMPLES
@CASES
def test_no_store_get_search_or_listing_crosses_the_scope(served, minter, writes, caller, subject, query):  # type: ignore[no-untyped-def]
    run = uuid.uuid4().hex[:8]
    writes = with_own(writes, caller)

    def store(tenant: str, agent: str, purposes: tuple[str, ...], purpose: str) -> LetheStore:
        token = minter.agent(f"{tenant}-{run}", agent, purposes)
        return LetheStore(
            LetheClient(served.url, token),
            purpose=purpose,
            agent_id=agent,
            id_key=ID_KEY,
            source_type="user_statement",
        )

    latest: dict[tuple[str, str, str, str, str], str] = {}  # (t, a, p, subject, key) -> tag
    for n, (tenant, agent, purpose, subj, key, words) in enumerate(writes):
        tag = f"w{n}"
        value = {"tag": tag, "text": " ".join(words)}
        store(tenant, agent, (purpose,), purpose).put((f"{subj}-{run}", "fact"), key, value)
        latest[(tenant, agent, purpose, subj, key)] = tag  # the same key in the same scope: an update
    tenant, agent, purposes = caller
    for purpose in purposes:
        mine = store(tenant, agent, tuple(purposes), purpose)
        prefix = (f"{subject}-{run}",) if subject else ()
        found = {i.value["tag"] for i in mine.search(prefix, query=query, limit=100)}
        me = (tenant, agent, purpose)
        expected = {tag for (t, a, p, s, _), tag in latest.items() if in_scope((t, a, p), me, subject, s)}
        assert found == expected
        for (t, a, p, s, key), tag in latest.items():
            item = mine.get((f"{s}-{run}", "fact"), key)
            if (t, a, p) == (tenant, agent, purpose):
                assert item is not None and item.value["tag"] == tag
            else:  # the same namespace and key in another tenant, agent or purpose reads as absent
                assert item is None or (item.value["tag"] == latest.get((tenant, agent, purpose, s, key)))
        own = {(f"{s}-{run}", "fact") for (t, a, p, s, _) in latest if (t, a, p) == (tenant, agent, purpose)}
        assert set(mine.list_namespaces()) == own
