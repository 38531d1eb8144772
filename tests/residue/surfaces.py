"""The probes of each surface, built against a deployment for one phase ("control" or "after").

A builder returns the same probe keys in both phases. HTTP probes open a connection each,
so node A's two workers (SO_REUSEPORT) share them; node B is the second node (a second
``lethe serve`` process on the same store, lexical recall only); MCP runs ``lethe mcp`` over
stdio with the official SDK client (a third process on the store), LangGraph the
``LetheStore`` over node A.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from langgraph.store.base import SearchItem

from tests.api.conftest import Served
from tests.api.mcp_clients import over_stdio
from tests.api.test_serve import Server
from tests.residue.deployment import LANGGRAPH_KEY, OTHER, OTHERS, SOURCE_REF, SUBJECT, URL, Deployment
from tests.residue.probes import Markers, Probe
from tests.residue.queries import FACT_QUERIES, NAME_FORMS, SUBJECT_FORMS, search_queries

Get = Callable[[str, dict[str, Any]], httpx.Response]


def markers(d: Deployment) -> Markers:
    from tests.residue.deployment import STRINGS

    return Markers(frozenset(d.ids.values()), STRINGS)


def _headers(d: Deployment, role: str, request_id: str | None = None) -> dict[str, str]:
    h = {"Authorization": f"Bearer {d.tokens[role]}"}
    if request_id:
        h["X-Request-ID"] = request_id
    return h


# No keep-alive: each request opens a connection of its own, so the kernel (SO_REUSEPORT) picks
# one of node A's workers per request; one client, so its setup is paid once.
_HTTP = httpx.Client(timeout=60, limits=httpx.Limits(max_keepalive_connections=0))


def _call(method: str, url: str, headers: dict[str, str], body: Any = None) -> httpx.Response:
    """One request on a connection of its own."""
    return _HTTP.request(method, url, headers=headers, json=body)


def _items(r: httpx.Response) -> list[Any]:
    assert r.status_code == 200, r.text
    return r.json()["items"]


def http_probes(d: Deployment, node: Server, label: str, phase: str, mk: Markers) -> list[Probe]:
    """Search (every query), read by id, list and the other subject's summary, on one node."""
    base = node.url
    out: list[Probe] = []

    def search(query: str, subject: str | None = None) -> Callable[[], list[str]]:
        body = {"query": query, "purpose": "support", "limit": 50, "token_budget": 100000}
        if subject is not None:
            body["subject_id"] = subject
        return lambda: mk.in_items(
            _items(_call("POST", f"{base}/v1/memories/search", _headers(d, "agent"), body))
        )

    for name, q in search_queries().items():
        out.append(Probe(f"search {label}", name, search(q)))
    for form, sid in SUBJECT_FORMS.items():
        out.append(Probe(f"search by subject_id {label}", f"{form}/tea", search("tea", sid)))
        out.append(Probe(f"search by subject_id {label}", f"{form}/name", search(NAME_FORMS["lower"], sid)))
        body = {"subject_id": sid, "limit": 100}
        out.append(
            Probe(
                f"list {label}",
                form,
                lambda b=body: mk.in_items(
                    _items(_call("POST", f"{base}/v1/memories/list", _headers(d, "agent"), b))
                ),
            )
        )

    def read(fact: str) -> Callable[[], list[str]]:
        def run() -> list[str]:
            rid = _request_id(d, phase, label, fact)
            r = _call("GET", f"{base}/v1/memories/{d.ids[fact]}", _headers(d, "agent", rid))
            assert r.status_code in (200, 404), r.text
            return mk.in_items([r.json()]) if r.status_code == 200 else []

        return run

    for fact in d.ids:
        out.append(Probe(f"read by id {label}", fact, read(fact)))
    # Another subject's summary built on the subject's facts.
    for q in ("household notes oolong Tromsø", "Bo Lindqvist"):
        out.append(Probe(f"other subject's summary {label}", f"search/{q}", search(q, OTHER)))
    out.append(
        Probe(
            f"other subject's summary {label}",
            "list",
            lambda: mk.in_items(
                _items(_call("POST", f"{base}/v1/memories/list", _headers(d, "agent"), {"subject_id": OTHER}))
            ),
        )
    )
    # Provenance: the web page's url and source_ref, and the facts' turn, as a read returns them.
    out.append(Probe(f"provenance {label}", "cello url and source_ref", _provenance(d, base, mk)))
    return out


def _provenance(d: Deployment, base: str, mk: Markers) -> Callable[[], list[str]]:
    def run() -> list[str]:
        r = _call("GET", f"{base}/v1/memories/{d.ids['cello']}", _headers(d, "agent"))
        if r.status_code != 200:
            return []
        p = r.json()["provenance"]
        return [f"{k}={v}" for k, v in p.items() if v in (SOURCE_REF, URL)]

    return run


def _request_id(d: Deployment, phase: str, label: str, fact: str) -> str:
    """The X-Request-ID of a read by id: its phase, node and the memory's place (no fact name:
    the log scan looks for the facts' words)."""
    return f"residue-{phase}-{label.replace(' ', '')}-{list(d.ids).index(fact)}"


def access_log_probes(d: Deployment, node: Server, label: str, phase: str) -> list[Probe]:
    """The node's own log of each read by id above: a 200 line says it served the subject."""

    def served(fact: str) -> Callable[[], list[str]]:
        rid = _request_id(d, phase, label, fact)

        def run() -> list[str]:
            deadline = time.monotonic() + 10
            while True:
                lines = [json.loads(x) for x in node.lines() if rid in x and x.startswith("{")]
                if lines or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert lines, f"no access line for {rid}"
            return [f"{e['method']} {e['route']} {e['status']}" for e in lines if e["status"] == 200]

        return run

    return [Probe(f"server log {label}", f"read {fact}", served(fact)) for fact in d.ids]


def export_probes(d: Deployment, node: Server, mk: Markers) -> list[Probe]:
    """The subject access export (JSON and HTML), and the other subject's (it held the summary)."""

    def export(subject: str, fmt: str) -> Callable[[], list[str]]:
        def run() -> list[str]:
            url = f"{node.url}/v1/subject-access-requests?format={fmt}"
            r = _call("POST", url, _headers(d, "privacy_officer"), {"subject_id": subject})
            if subject != OTHER and r.status_code == 409:
                return []  # the fence: nothing is exported of a forgotten subject
            assert r.status_code == 200, r.text
            # The other subject's export lists the tombstoned summary by id (ids remain by design:
            # "What remains"); what it must not hold is the subject's content.
            return (mk if subject != OTHER else mk.content_only()).in_text(r.text)

        return run

    out = [
        Probe("subject access export", f"{form}/{fmt}", export(sid, fmt))
        for form, sid in SUBJECT_FORMS.items()
        for fmt in ("json", "html")
    ]
    out.append(Probe("subject access export", "other subject/json", export(OTHER, "json")))
    return out


def count_probes(d: Deployment, node: Server, label: str, scraped: dict[str, float]) -> list[Probe]:
    """KPIs and ``/metrics``: live memories beyond the other subject's own two are the subject's
    (its facts and the summary built on them)."""

    def kpis() -> list[str]:
        r = _call("GET", f"{node.url}/v1/audit/kpis", _headers(d, "auditor"))
        assert r.status_code == 200, r.text
        extra = r.json()["live_memories"] - len(OTHERS)
        return [f"live_memories counts {extra} of the subject"] if extra else []

    def metrics() -> list[str]:
        wait = scraped.get(label, 0.0) + 31.0 - time.monotonic()  # a worker keeps its KPI gauges 30 s
        if wait > 0:
            time.sleep(wait)
        scraped[label] = time.monotonic()
        text = httpx.get(f"{node.url}/metrics", timeout=60).text
        line = next(x for x in text.splitlines() if x.startswith("lethe_memories_live "))
        extra = int(float(line.split()[1])) - len(OTHERS)
        return [f"lethe_memories_live counts {extra} of the subject"] if extra else []

    return [
        Probe(f"KPIs {label}", "live_memories", kpis),
        Probe(f"/metrics {label}", "lethe_memories_live", metrics),
    ]


def mcp_probes(d: Deployment, errlog: Path, mk: Markers) -> list[Probe]:
    """``lethe mcp`` over stdio (the SDK's client): recall with the exact and name queries, and
    get_memory of every id; run in one session, recorded as probes."""
    results: dict[str, list[str]] = {}

    async def session() -> None:
        async with over_stdio(Served(d.node_a, d.tokens), d.tokens["agent"], errlog) as client:
            queries = {f"{f}/exact": forms["exact"] for f, forms in FACT_QUERIES.items()}
            queries.update({f"name/{k}": v for k, v in NAME_FORMS.items()})
            for name, q in queries.items():
                r = await client.call_tool("recall", {"query": q, "purpose": "support", "limit": 50})
                assert not r.is_error, r.content
                results[f"recall {name}"] = mk.in_items(r.structured_content["items"])
            for fact, mid in d.ids.items():
                r = await client.call_tool("get_memory", {"memory_id": mid})
                results[f"get_memory {fact}"] = [] if r.is_error else mk.in_items([r.structured_content])

    asyncio.run(session())
    return [Probe("MCP (stdio)", name, lambda v=found: v) for name, found in results.items()]


def langgraph_probes(d: Deployment, mk: Markers) -> list[Probe]:
    """``LetheStore`` over node A: search under the subject's namespace and the whole store, get."""
    store = d.store(d.node_a)

    def search(prefix: tuple[str, ...], query: str) -> Callable[[], list[str]]:
        def run() -> list[str]:
            hits: list[SearchItem] = store.search(prefix, query=query, limit=50)
            return mk.in_items([{"key": h.key, "value": h.value} for h in hits])

        return run

    out = [
        Probe("LangGraph store", f"search subject/{f}", search((SUBJECT,), forms["exact"]))
        for f, forms in FACT_QUERIES.items()
    ]
    out.append(Probe("LangGraph store", "search subject preference", search((SUBJECT, "preference"), "seat")))
    out.append(Probe("LangGraph store", "search all/name", search((), NAME_FORMS["lower"])))

    def get() -> list[str]:
        item = store.get((SUBJECT, "preference"), LANGGRAPH_KEY)
        return [] if item is None else mk.in_items([item.value])

    out.append(Probe("LangGraph store", "get seat-preference", get))
    return out


def restored_probes(client: Any, d: Deployment, mk: Markers) -> list[Probe]:
    """A deployment restored from the backup taken before the forget (in process, same tokens)."""
    h = _headers(d, "agent")

    def search(q: str) -> Callable[[], list[str]]:
        body = {"query": q, "purpose": "support", "limit": 50}
        return lambda: mk.in_items(_items(client.post("/v1/memories/search", json=body, headers=h)))

    def read(mid: str) -> Callable[[], list[str]]:
        def run() -> list[str]:
            r = client.get(f"/v1/memories/{mid}", headers=h)
            return mk.in_items([r.json()]) if r.status_code == 200 else []

        return run

    def export() -> list[str]:
        body = {"subject_id": SUBJECT}
        r = client.post("/v1/subject-access-requests", json=body, headers=_headers(d, "privacy_officer"))
        return mk.in_text(r.text) if r.status_code == 200 else []

    out = [
        Probe("backup restored", f"search {f}", search(forms["exact"])) for f, forms in FACT_QUERIES.items()
    ]
    out += [Probe("backup restored", f"read {fact}", read(mid)) for fact, mid in d.ids.items()]
    out.append(Probe("backup restored", "export", export))
    out.append(
        Probe(
            "backup restored",
            "list",
            lambda: mk.in_items(
                _items(client.post("/v1/memories/list", json={"subject_id": SUBJECT}, headers=h))
            ),
        )
    )
    return eager(out)


def eager(probes: list[Probe]) -> list[Probe]:
    """Run now (the surface lives only inside a block); the probes return what they found then."""
    return [Probe(p.surface, p.name, lambda v=p.run(): v) for p in probes]


def others_still_served(d: Deployment) -> dict[str, bool]:
    """After the forget: the other subject's own memories still come back on each node, by search
    and by id (an empty answer is the surface working, not the surface broken)."""
    out = {}
    for node, label in ((d.node_a, "node A"), (d.node_b, "node B")):
        body = {"query": "Bo Lindqvist coffee Bergen", "purpose": "support", "limit": 50}
        found = {
            i["id"]
            for i in _items(_call("POST", f"{node.url}/v1/memories/search", _headers(d, "agent"), body))
        }
        out[f"search {label}"] = set(d.other_ids) <= found
        r = _call("GET", f"{node.url}/v1/memories/{d.other_ids[0]}", _headers(d, "agent"))
        out[f"read {label}"] = r.status_code == 200
    return out


def recall_of(d: Deployment, node: Server) -> str:
    """How the node ranked a search: "hybrid" (sealed vectors too) or "lexical"."""
    body = {"query": "Bo Lindqvist", "purpose": "support"}
    r = _call("POST", f"{node.url}/v1/memories/search", _headers(d, "agent"), body)
    assert r.status_code == 200, r.text
    return r.json()["recall"]
