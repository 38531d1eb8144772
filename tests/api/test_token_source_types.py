"""Trust comes from the credential: a token names the source types it may assert, on SQLite
and PostgreSQL (docs/governance.md, "Trust comes from the credential").

Asserting another is a 403 problem naming the allowed ones, on the first write and on the
hot path that recalls the token from memory; every write path applies it (the HTTP write
and the bulk import). A token minted without source types keeps what its role may write,
including one minted before migration 0020 added the column.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import Container
from lethe.vault.clock import to_db, utcnow
from lethe.vault.errors import InvalidCommand, SourceTypeRefused
from lethe.vault.model import Role, SourceType
from lethe.vault.store.schema import HEAD, downgrade, schema_state, upgrade
from tests.api.conftest import Api, assert_problem, bearer, memory_body
from tests.conftest import event_count, page_url, write_cmd


def mint(api: Api, admin: str, **body: Any) -> dict[str, Any]:
    body = {"role": "agent", "agent_id": "a1", "purposes": ["support"], **body}
    r = api.client.post("/v1/admin/tokens", json=body, headers=bearer(admin))
    assert r.status_code == 201, r.text
    return r.json()


def write(api: Api, token: str, source: str) -> Any:
    provenance = {"source_type": source, "source_ref": "session-1/turn-1", "url": page_url(source)}
    return api.client.post("/v1/memories", json=memory_body(provenance=provenance), headers=bearer(token))


@pytest.fixture
def admin(api: Api) -> str:
    return api.mint(Role.ADMIN)


def test_a_token_without_user_statement_gets_a_403_naming_the_allowed_ones_one_with_it_a_201(
    api: Api, admin: str
) -> None:
    limited = mint(api, admin, source_types=["agent_inference", "tool_result"])
    assert limited["source_types"] == ["tool_result", "agent_inference"]  # the enum's order
    before = api.events()
    for _ in range(2):  # the first write looks the token up; the second recalls it (hot path)
        doc = assert_problem(write(api, limited["token"], "user_statement"), 403)
        assert doc["title"] == "Source type not allowed"
        assert doc["detail"] == (
            "this token may not assert source type user_statement; "
            "it may assert: tool_result, agent_inference"
        )
    assert api.events() == before  # nothing written
    allowed = write(api, limited["token"], "agent_inference")
    assert allowed.status_code == 201 and allowed.json()["status"] == "quarantined"

    user = mint(api, admin, agent_id="a2", source_types=["user_statement"])
    for _ in range(2):
        said = write(api, user["token"], "user_statement")
        assert said.status_code == 201 and said.json()["status"] == "active"
    assert_problem(write(api, user["token"], "web_page"), 403)


def test_a_token_minted_without_source_types_keeps_what_its_role_may_write(api: Api, admin: str) -> None:
    legacy = mint(api, admin)
    assert legacy["source_types"] is None
    said = write(api, legacy["token"], "user_statement")
    assert said.status_code == 201 and said.json()["status"] == "active"
    scraped = write(api, legacy["token"], "web_page")
    assert scraped.status_code == 201 and scraped.json()["status"] == "quarantined"
    doc = assert_problem(write(api, legacy["token"], "operator_config"), 403)
    assert (
        doc["title"] == "Refused by policy" and "it may assert: user_statement, tool_result" in doc["detail"]
    )

    operator = mint(api, admin, role="operator", agent_id=None, purposes=[])
    assert operator["source_types"] is None
    config = write(api, operator["token"], "operator_config")
    assert config.status_code == 201 and config.json()["status"] == "active"
    assert_problem(write(api, operator["token"], "user_statement"), 403)


def test_listing_tokens_shows_their_source_types(api: Api, admin: str) -> None:
    limited = mint(api, admin, source_types=["web_page"])
    legacy = mint(api, admin, agent_id="a2")
    r = api.client.get("/v1/admin/tokens", headers=bearer(admin))
    assert r.status_code == 200
    listed = {t["id"]: t["source_types"] for t in r.json()["items"]}
    assert listed[limited["id"]] == ["web_page"] and listed[legacy["id"]] is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"source_types": ["operator_config"]}, "a token of role agent may not assert operator_config"),
        (
            {"role": "reviewer", "agent_id": None, "purposes": [], "source_types": ["user_statement"]},
            "no source",
        ),
        (
            {"role": "operator", "agent_id": None, "purposes": [], "source_types": ["user_statement"]},
            "may not",
        ),
    ],
)
def test_minting_source_types_the_role_cannot_write_is_a_422(
    api: Api, admin: str, body: dict[str, Any], message: str
) -> None:
    full = {"role": "agent", "agent_id": "a1", "purposes": ["support"], **body}
    doc = assert_problem(api.client.post("/v1/admin/tokens", json=full, headers=bearer(admin)), 422)
    assert message in doc["detail"]
    for bad in ([], ["no_such_type"]):  # an empty list, an unknown name: the schema refuses them
        full["source_types"] = bad
        assert_problem(api.client.post("/v1/admin/tokens", json=full, headers=bearer(admin)), 422)


def test_the_bulk_import_applies_the_credentials_source_types(lethe: Container) -> None:
    token, _ = lethe.tokens.create(Role.AGENT, "t1", "a1", ["support"], source_types=["agent_inference"])
    caller = lethe.tokens.authenticate(token)
    assert caller.source_types == frozenset({SourceType.AGENT_INFERENCE})
    before = event_count(lethe)
    batch = [write_cmd("a guess", source=SourceType.AGENT_INFERENCE), write_cmd("a claimed statement")]
    with pytest.raises(SourceTypeRefused, match="it may assert: agent_inference"):
        lethe.memories.import_batch(caller, batch)
    assert event_count(lethe) == before  # all or nothing
    assert lethe.memories.import_batch(caller, batch[:1]) == 1  # the positive control


def test_the_service_refuses_an_unknown_or_empty_list(lethe: Container) -> None:
    for bad in ([], ["no_such_type"], ["user_statement", "operator_config"]):
        with pytest.raises(InvalidCommand):
            lethe.tokens.create(Role.AGENT, "t1", "a1", ["support"], source_types=bad)


def test_a_token_minted_before_migration_0020_keeps_its_roles_default(lethe: Container) -> None:
    engine = lethe.uow.engine
    downgrade(engine, "0019")
    token = "lethe_" + "L" * 43
    row = {
        "id": str(uuid.uuid4()),
        "token_hash": hashlib.sha256(token.encode()).hexdigest(),
        "role": "agent",
        "tenant_id": "t1",
        "agent_id": "a1",
        "purposes": '["support"]',
        "created_at": to_db(utcnow()),
    }
    with engine.begin() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("api_tokens")}
        assert "source_types" not in columns  # 0019's table
        conn.execute(
            sa.text(
                "INSERT INTO api_tokens (id, token_hash, role, tenant_id, agent_id, purposes, created_at)"
                " VALUES (:id, :token_hash, :role, :tenant_id, :agent_id, :purposes, :created_at)"
            ),
            row,
        )
    upgrade(engine)
    assert schema_state(engine).current == HEAD
    caller = lethe.tokens.authenticate(token)
    assert caller.source_types is None
    assert lethe.tokens.info(row["id"]).source_types is None
    said = lethe.memories.write(caller, write_cmd("Alice prefers tea")).item
    assert said.status.value == "active"
