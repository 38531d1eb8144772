"""The data policy over HTTP, on SQLite and PostgreSQL: refusals name the class and hold nothing.

A refused write leaves no trace of its text: not in the response, not in a log line, not in
the store (the SQLite file and its WAL are scanned byte for byte; on PostgreSQL the event
log and the memories are counted). Each refusal is paired with a positive control.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from lethe.api.http.logging import JsonFormatter
from lethe.api.server.app import create_app
from lethe.api.settings import DataPolicyConfig, Settings
from lethe.keys.filescan import find_in_files
from lethe.vault.errors import ForbiddenContent
from tests.api.conftest import Api, api_settings, assert_problem, bearer, memory_body
from tests.conftest import agent, event_count, write_cmd

CARD = "4111 1111 1111 1111"  # Luhn-valid (a test Visa number)
CARD_DIGITS = "4111111111111111"
NOT_A_CARD = "4111 1111 1111 1112"  # 16 digits failing Luhn
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
CONFIGURED = DataPolicyConfig(
    patterns={"national_id": r"\b\d{3}-\d{2}-\d{4}\b"},
    identifiers={"named_account": ["ACME-0001"]},
)


@pytest.fixture
def policy_api(settings: Settings) -> Iterator[Api]:
    app = create_app(api_settings(settings, data_policy=CONFIGURED))
    with TestClient(app) as client:
        yield Api(app, client)


def _write(api: Api, token: str, content: str, **kw) -> object:
    return api.client.post("/v1/memories", json=memory_body(content, **kw), headers=bearer(token))


def _memories(api: Api) -> int:
    with api.container.uow.maintenance("test: inspect every tenant's rows"), api.container.uow.read() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one()


def _counted(api: Api, forbidden_class: str) -> float:
    metrics = api.client.get("/metrics").text
    m = re.search(
        rf'^lethe_forbidden_content_total\{{forbidden_class="{forbidden_class}"\}} (\S+)$', metrics, re.M
    )
    return float(m.group(1)) if m else 0.0


REFUSED = [
    (f"my card is {CARD}, keep it", (CARD, CARD_DIGITS), "payment_card"),
    (PRIVATE_KEY, (KEY_BODY,), "private_key"),
]


@pytest.mark.parametrize(("content", "needles", "forbidden_class"), REFUSED, ids=["card", "private_key"])
def test_card_and_private_key_are_refused_and_left_nowhere(
    api: Api,
    backend: str,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    content: str,
    needles: tuple[str, ...],
    forbidden_class: str,
) -> None:
    token = api.mint()
    events, memories = api.events(), _memories(api)
    with caplog.at_level(logging.DEBUG):
        r = _write(api, token, content)
    doc = assert_problem(r, 422)
    assert doc["forbidden_class"] == forbidden_class and doc["title"] == "Forbidden content"
    assert not [n for n in needles if n in r.text]
    # No log line (any logger, any level, as the JSON formatter writes it) holds the text.
    lines = [JsonFormatter().format(rec) for rec in caplog.records]
    assert any("/v1/memories" in line for line in lines), "the request was logged: the check reads real lines"
    assert not [line for line in lines for n in needles if n in line]
    # Nothing was stored: no event, no memory ...
    assert (api.events(), _memories(api)) == (events, memories)
    # ... and on SQLite, not a byte of it in the database file or its WAL (content is sealed
    # when stored, so this scan guards against a clear copy anywhere else: the log, an index).
    if backend == "sqlite":
        files = sorted(settings.data_dir.glob("lethe.sqlite3*"))
        assert files and not any(find_in_files(files, [n.encode() for n in needles]).values())
    # Positive control: the same write without the forbidden part is stored.
    assert _write(api, token, "my card ends in 1111, keep it").status_code == 201


def test_near_misses_are_stored(api: Api) -> None:
    token = api.mint()
    r = _write(api, token, f"order number {NOT_A_CARD}")
    assert r.status_code == 201, r.text
    r = _write(api, token, "Alice prefers tea; her order 1234567890123456 ships Monday")
    assert r.status_code == 201, r.text


def test_secret_in_provenance_reference_is_refused(api: Api, backend: str, settings: Settings) -> None:
    """A secret in ``source_ref`` is a 422 naming its class, and is stored nowhere: no event
    and no memory row is added (the counts the control shows moving), and on SQLite not a
    byte of it is in the file or its WAL. ``source_ref`` is sealed when stored, so the scan
    guards against a clear copy elsewhere (a log, an index) and the counts are what see a
    stored write."""
    token = api.mint()
    key = "Zx81kLq0PmN2vB7cR4tY9wE3"
    prov = {
        "source_type": "tool_result",
        "source_ref": f"https://api.example.com/v1/report?access_token={key}",
    }
    events, memories = api.events(), _memories(api)
    doc = assert_problem(_write(api, token, "the report says 42", provenance=prov), 422)
    assert doc["forbidden_class"] == "api_key" and key not in str(doc)
    assert (api.events(), _memories(api)) == (events, memories)
    if backend == "sqlite":
        files = sorted(settings.data_dir.glob("lethe.sqlite3*"))
        assert files and not any(find_in_files(files, [key.encode()]).values())
    # Positive control: the same write, its URL without the token, is stored (one event, one row).
    prov["source_ref"] = "https://api.example.com/v1/report?page=2"
    assert _write(api, token, "the report says 42", provenance=prov).status_code == 201
    assert (api.events(), _memories(api)) == (events + 1, memories + 1)


def test_configured_pattern_and_identifier_are_refused_and_counted(policy_api: Api) -> None:
    api = policy_api
    token = api.mint()
    doc = assert_problem(_write(api, token, "ssn 123-45-6789 on file"), 422)
    assert doc["forbidden_class"] == "national_id" and "6789" not in str(doc)
    doc = assert_problem(_write(api, token, "invoice for acme-0001"), 422)
    assert doc["forbidden_class"] == "named_account" and "0001" not in str(doc)
    assert_problem(_write(api, token, "invoice for acme-0001 again"), 422)
    assert assert_problem(_write(api, token, CARD), 422)["forbidden_class"] == "payment_card"
    # Positive controls: near the configured ones, but not them.
    assert _write(api, token, "ticket 123-45-67890 and acme-00012").status_code == 201
    assert _counted(api, "national_id") == 1
    assert _counted(api, "named_account") == 2
    assert _counted(api, "payment_card") == 1
    assert _counted(api, "private_key") == 0
    metrics = api.client.get("/metrics").text
    assert "acme" not in metrics.lower() and "6789" not in metrics


def test_disabled_class_lets_its_content_through(settings: Settings) -> None:
    app = create_app(api_settings(settings, data_policy=DataPolicyConfig(disabled=["payment_card"])))
    with TestClient(app) as client:
        api = Api(app, client)
        token = api.mint()
        r = _write(api, token, f"card {CARD}")
        assert r.status_code == 201, r.text
        assert assert_problem(_write(api, token, PRIVATE_KEY), 422)["forbidden_class"] == "private_key"


def test_bulk_import_is_checked_all_or_nothing(lethe) -> None:
    before = event_count(lethe)
    batch = [write_cmd("Alice prefers tea"), write_cmd(f"card {CARD}")]
    with pytest.raises(ForbiddenContent) as caught:
        lethe.memories.import_batch(agent(), batch)
    assert caught.value.forbidden_class == "payment_card"
    assert event_count(lethe) == before
    assert lethe.memories.import_batch(agent(), [write_cmd("Alice prefers tea")]) == 1


def test_update_is_checked(api: Api) -> None:
    token = api.mint()
    first = _write(api, token, "Alice prefers tea")
    assert first.status_code == 201, first.text
    item = first.json()
    body = memory_body(f"Alice paid with {CARD}", id=item["id"], expected_version=item["version"])
    doc = assert_problem(api.client.post("/v1/memories", json=body, headers=bearer(token)), 422)
    assert doc["forbidden_class"] == "payment_card"
    assert api.client.get(f"/v1/memories/{item['id']}", headers=bearer(token)).json()["version"] == 1
