"""Filing a residue hunt over HTTP, the CLI and the console (SQLite and PostgreSQL).

``identifiers`` and ``residue`` on ``POST /v1/erasure-requests``: accepted (202) within
bounds; too many, empty, too long, or an unknown choice are 422 problem details that
never echo an identifier, and file nothing. ``lethe forget --identifier … --residue
retract`` and the console's form carry them to the same hunt.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from lethe.vault.model import Role, Status
from tests.api.conftest import Api, assert_problem, bearer
from tests.api.test_console import csrf_of, minted, sign_in
from tests.conftest import agent, write_cmd

SECRET = "Zoë Secretname"

INSPECT = "test: inspect every tenant's rows"  # behind PostgreSQL's tenant wall otherwise


def _file(api: Api, **fields: Any) -> Any:
    body = {"subject_id": "zoe@example.com", "legal_basis": "gdpr-art17-1a", **fields}
    return api.client.post("/v1/erasure-requests", json=body, headers=bearer(api.mint("privacy_officer")))


def _jobs(api: Api) -> list[Any]:
    return api.container.erasure.list(api.tokens.authenticate(api.mint("auditor")))


@pytest.mark.parametrize(
    "fields",
    [
        {"identifiers": [f"{SECRET} {n}" for n in range(21)]},  # too many
        {"identifiers": [SECRET, "  "]},  # an empty one
        {"identifiers": [SECRET + "x" * 200]},  # too long
        {"identifiers": []},  # empty list with a choice
        {"identifiers": [SECRET], "residue": "delete"},  # no such choice
    ],
    ids=["too-many", "empty", "too-long", "choice-without-identifiers", "unknown-choice"],
)
def test_out_of_bounds_identifiers_are_a_422_problem_that_echoes_none_of_them(
    api: Api, fields: dict[str, Any]
) -> None:
    fields.setdefault("residue", "retract")
    problem = assert_problem(_file(api, **fields), 422)
    assert "Secretname" not in json.dumps(problem, ensure_ascii=False)
    assert _jobs(api) == []


def test_identifiers_within_bounds_are_accepted_and_hunted(api: Api) -> None:
    c = api.container
    other = c.memories.write(agent(), write_cmd("Zoë Secretname asked for a refund", subject="c-7")).item
    r = _file(api, identifiers=[SECRET, *[f"{n:03d} " + "y" * 196 for n in range(19)]], residue="retract")
    assert r.status_code == 202, r.text
    c.erasure.run_pending()
    job = c.erasure.get(api.tokens.authenticate(api.mint("auditor")), r.json()["id"])
    hunted = next(s for s in job.steps if s.step == "residue_hunted")
    assert (hunted.evidence["found"], hunted.evidence["retracted"]) == (1, 1)
    assert _status(api, other.id) == Status.RETRACTED


def _status(api: Api, memory_id: str) -> str:
    with api.container.uow.maintenance(INSPECT), api.container.uow.read() as conn:
        return str(
            conn.execute(sa.text("SELECT status FROM memories WHERE id = :i"), {"i": memory_id}).scalar_one()
        )


def test_lethe_forget_takes_identifiers_and_a_residue_choice(
    api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    c = api.container
    named = c.memories.write(agent(), write_cmd("Zoë Secretname's account 99-1234", subject="c-8")).item
    control = c.memories.write(agent(), write_cmd("Zoë Other paid in cash", subject="c-9")).item
    listed = tmp_path / "ids.txt"
    listed.write_text("99-1234\n\n", encoding="utf-8")
    args = ["forget", "--tenant", "t1", "--subject", "zoe", "--basis", "voluntary"]
    out = CliRunner().invoke(
        cli, [*args, "--identifier", SECRET, "--identifiers-file", str(listed), "--residue", "review"]
    )
    assert out.exit_code == 0, out.output
    assert "Secretname" not in out.output
    assert _status(api, named.id) == Status.QUARANTINED
    assert _status(api, control.id) == Status.ACTIVE  # "Zoë" alone does not name her
    refused = CliRunner().invoke(cli, [*args, "--identifier", "a", "--residue", "review"])
    assert refused.exit_code != 0 and "identifiers[0]" in refused.output


def test_the_console_form_files_identifiers_with_the_choice(api: Api) -> None:
    c = api.container
    named = c.memories.write(agent(), write_cmd("Zoë Secretname called twice", subject="c-10")).item
    sign_in(api.client, minted(api, Role.PRIVACY_OFFICER))
    page = api.client.get("/console/requests/new").text
    assert 'name="identifiers"' in page and 'name="residue"' in page
    form = {
        "csrf_token": csrf_of(api.client, "/console/requests/new"),
        "subject_id": "zoe@example.com",
        "legal_basis": "gdpr-art17-1a",
        "identifiers": f"{SECRET}\n",
        "residue": "retract",
    }
    preview = api.client.post("/console/requests/preview", data=form)
    assert preview.status_code == 200, preview.text[-400:]
    assert "1 identifier(s)" in preview.text and "will be retracted" in preview.text
    filed = api.client.post("/console/requests", data=form, follow_redirects=False)
    assert filed.status_code == 303, filed.text
    c.erasure.run_pending()
    assert _status(api, named.id) == Status.RETRACTED


def test_a_reviewer_keeps_a_queued_memory_over_http_only_with_a_reason(api: Api) -> None:
    c = api.container
    named = c.memories.write(agent(), write_cmd("Zoë Secretname paid late", subject="c-11")).item
    assert _file(api, identifiers=[SECRET], residue="review").status_code == 202
    c.erasure.run_pending()
    assert _status(api, named.id) == Status.QUARANTINED
    reviewer = bearer(api.mint("reviewer"))
    url = f"/v1/memories/{named.id}/promote"
    version = named.version + 1
    refused = assert_problem(api.client.post(url, json={"expected_version": version}, headers=reviewer), 422)
    assert "needs a reason" in refused["detail"]
    kept = api.client.post(url, json={"expected_version": version, "reason": "Ticket 12"}, headers=reviewer)
    assert kept.status_code == 200, kept.text
    assert _status(api, named.id) == Status.ACTIVE


def test_a_retry_with_the_same_identifiers_is_the_same_filing_and_other_identifiers_conflict(
    api: Api,
) -> None:
    key = {"idempotency_key": "residue-1"}
    first = _file(api, identifiers=[SECRET], residue="review", **key)
    again = _file(api, identifiers=[SECRET], residue="review", **key)
    assert (first.status_code, again.status_code) == (202, 200), again.text
    assert again.json()["id"] == first.json()["id"]
    other = _file(api, identifiers=["Someone Else"], residue="review", **key)
    problem = assert_problem(other, 409)
    assert "Secretname" not in json.dumps(problem) and "Someone" not in json.dumps(problem)
    assert len(_jobs(api)) == 1
