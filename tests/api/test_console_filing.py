"""The console files a request once: preview, confirm, 303 to the request page, which shows
the verification code once (SQLite and PostgreSQL)."""

from __future__ import annotations

import re

import sqlalchemy as sa

from lethe.vault.model import Role
from lethe.vault.store.tables import console_one_time, erasure_jobs, events
from tests.api.conftest import Api
from tests.api.test_console import csrf_of, minted, sign_in
from tests.conftest import agent, write_cmd

CODE = re.compile(r'id="verification_code" class="secret" readonly value="([^"]+)"')


def _count(api: Api, table: sa.Table) -> int:
    with api.container.uow.maintenance("test: inspect every tenant's rows"), api.container.uow.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def test_preview_then_confirm_files_once_and_the_code_is_shown_once(api: Api) -> None:
    subject = "erin@example.com"
    api.container.memories.write(agent(), write_cmd("erin drinks tea", subject=subject))
    sign_in(api.client, minted(api, Role.PRIVACY_OFFICER))
    form = {
        "subject_id": subject,
        "legal_basis": "gdpr-art17-1a",
        "reference": "DSR-55",
        "csrf_token": csrf_of(api.client, "/console/requests/new"),
    }
    logged = _count(api, events)
    shown = api.client.post("/console/requests/preview", data=form, follow_redirects=False)
    assert shown.status_code == 200, shown.text[-400:]
    assert re.search(r'id="preview-memories">1 to forget', shown.text)
    assert 'action="/console/requests"' in shown.text and "File the request" in shown.text
    assert _count(api, erasure_jobs) == 0 and _count(api, events) == logged  # the preview changed nothing

    filed = api.client.post("/console/requests", data=form, follow_redirects=False)
    assert filed.status_code == 303
    location = filed.headers["location"]
    (job_id,) = re.fullmatch(r"/console/requests/([0-9a-f-]{36})", location).groups()  # type: ignore[union-attr]
    assert CODE.search(filed.text) is None
    held = _count(api, console_one_time)
    assert held == 1

    first = api.client.get(location)
    code = CODE.search(first.text)
    assert code is not None and "Erasure request filed" in first.text and "DSR-55" in first.text
    assert code.group(1) not in location
    with api.container.uow.read() as conn:  # sealed while held, and gone once shown
        assert conn.execute(sa.select(console_one_time)).all() == []

    again = api.client.get(location)
    assert again.status_code == 200 and CODE.search(again.text) is None
    assert code.group(1) not in again.text and "Erasure request filed" not in again.text
    assert _count(api, erasure_jobs) == 1
    (job,) = api.container.erasure.list(api.tokens.authenticate(minted(api, Role.PRIVACY_OFFICER)))
    assert job.id == job_id


def test_the_held_code_is_sealed_and_only_its_session_can_take_it(api: Api) -> None:
    from lethe.vault.access.one_time import OneTimeValues

    values = OneTimeValues(api.container.uow)
    session_a, session_b = "a" * 43, "b" * 43
    values.hold(session_a, "verification_code:j1", "CODE-1234-5678")
    with api.container.uow.read() as conn:
        (row,) = conn.execute(sa.select(console_one_time)).all()
    assert b"CODE-1234-5678" not in bytes(row.sealed) and "a" * 43 not in row.session_hash
    assert values.take(session_b, "verification_code:j1") is None
    assert values.take(session_a, "verification_code:j2") is None
    assert values.take(session_a, "verification_code:j1") == "CODE-1234-5678"
    assert values.take(session_a, "verification_code:j1") is None
