"""The cross-agent id residual, as docs/governance.md ("What a memory id reveals") states it.

A write naming an existing memory id with ``expected_version: 0`` cannot create it (the id
is taken within the tenant), so another agent's id answers 404 where an unknown id creates a
memory (201): the answer tells an agent that an id it already holds exists. It tells no
more: the 404 is the one problem an unknown id updated at version 1 gets, nothing is written
and the owner's memory is intact; and ids are random UUIDs (version 4), so the oracle needs
an id its caller was given, it cannot be used to find one. Another tenant's ids are separate:
the same id is free there (201).
"""

from __future__ import annotations

import uuid

from tests.api.conftest import Api, bearer, memory_body


def test_another_agents_id_answers_404_which_says_only_that_it_exists(api: Api) -> None:
    owner, other = bearer(api.mint(agent="a1")), bearer(api.mint(agent="a2"))
    mine = api.client.post("/v1/memories", json=memory_body("a1's note"), headers=owner).json()
    assert uuid.UUID(mine["id"]).version == 4  # random: an id is not guessable from another

    taken = api.client.post("/v1/memories", json=memory_body("a2's try", id=mine["id"]), headers=other)
    assert taken.status_code == 404
    unknown_at_v1 = api.client.post(
        "/v1/memories", json=memory_body("x", id=str(uuid.uuid4()), expected_version=1), headers=other
    )
    assert unknown_at_v1.status_code == 404
    same = {k: v for k, v in taken.json().items() if k != "instance"}
    assert same == {k: v for k, v in unknown_at_v1.json().items() if k != "instance"}
    assert "a1's note" not in taken.text and "a1" not in taken.json()["detail"]
    kept = api.client.get(f"/v1/memories/{mine['id']}", headers=owner).json()
    assert kept["version"] == 1 and kept["content"] == "a1's note"

    fresh = api.client.post("/v1/memories", json=memory_body("new", id=str(uuid.uuid4())), headers=other)
    assert fresh.status_code == 201  # an unknown id with expected_version 0 creates a memory
    elsewhere = bearer(api.mint(tenant="t2", agent="a1"))
    there = api.client.post("/v1/memories", json=memory_body("t2 note", id=mine["id"]), headers=elsewhere)
    assert there.status_code == 201  # ids are per tenant: no cross-tenant oracle
