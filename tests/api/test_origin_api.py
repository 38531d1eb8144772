"""The structured origin over HTTP: a ``web_page`` must name its page by an absolute http(s)
URL (422 otherwise, never echoing it), the fields come back decrypted to the agent and the
reviewer, and ``POST /v1/retractions`` by ``source_ref`` still finds what was written from it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, assert_problem, bearer, memory_body

PAGE = "https://news.example/2026/alice-joins-example-corp?ref=feed"


def web(**provenance: Any) -> dict[str, Any]:
    return memory_body(
        "Alice works at Example Corp",
        kind="fact",
        provenance={"source_type": "web_page", "source_ref": "crawl-7/page-3", **provenance},
    )


def test_a_web_page_without_its_url_is_refused_and_with_it_is_stored(api: Api) -> None:
    h = bearer(api.mint())
    doc = assert_problem(api.client.post("/v1/memories", json=web(), headers=h), 422)
    assert "provenance.url" in doc["detail"]
    r = api.client.post("/v1/memories", json=web(url=PAGE, turn="t-4", tool="browser"), headers=h)
    assert r.status_code == 201, r.text
    assert r.json()["provenance"] == {
        "source_type": "web_page",
        "source_ref": "crawl-7/page-3",
        "sources": [],
        "turn": "t-4",
        "tool": "browser",
        "url": PAGE,
        "document_ref": None,
        "origins": None,  # a summary's alone (recorded by the vault)
    }


@pytest.mark.parametrize(
    "url",
    [
        "news.example/alice",  # not absolute
        "/alice",
        "ftp://news.example/alice",  # not http(s)
        "javascript:alert(1)",
        "https://",  # no host
        "https://news.example/al ice",  # whitespace
        "https://news.example:99999/",  # port out of range
        "https://news.example/" + "a" * 2100,  # too long
    ],
)
def test_a_bad_url_is_a_422_that_does_not_echo_it(api: Api, url: str) -> None:
    h = bearer(api.mint())
    before = api.events()
    doc = assert_problem(api.client.post("/v1/memories", json=web(url=url), headers=h), 422)
    assert url not in str(doc) and api.events() == before


def test_a_bounded_origin_field_too_long_is_a_422(api: Api) -> None:
    h = bearer(api.mint())
    for field in ("turn", "tool", "document_ref"):
        assert_problem(
            api.client.post("/v1/memories", json=web(url=PAGE, **{field: "x" * 513}), headers=h), 422
        )


def test_the_reviewer_sees_the_origin_and_retraction_by_source_finds_it(api: Api) -> None:
    h, rv = bearer(api.mint()), bearer(api.mint("reviewer"))
    ids = [
        api.client.post("/v1/memories", json=web(url=PAGE, document_ref="feed-12"), headers=h).json()["id"]
        for _ in range(2)
    ]
    other = api.client.post("/v1/memories", json=web(url=PAGE, source_ref="crawl-7/page-4"), headers=h).json()
    [first, *_] = api.client.get("/v1/review-queue", headers=rv).json()["items"]
    assert first["provenance"]["url"] == PAGE and first["provenance"]["document_ref"] == "feed-12"
    body = {"source_ref": "crawl-7/page-3", "reason": "the crawl was poisoned"}
    r = api.client.post("/v1/retractions", json=body, headers=rv)
    assert r.status_code == 202, r.text
    assert r.json()["memory_ids"] == sorted(ids)
    queue = api.client.get("/v1/review-queue", headers=rv).json()["items"]
    assert [i["id"] for i in queue] == [other["id"]]
