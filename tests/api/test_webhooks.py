"""Signed webhooks over HTTP (SQLite and PostgreSQL): subscriptions, the outbox, delivery.

Every delivery a local receiver gets is verified with the ``standardwebhooks`` library. The
delivery worker is driven by hand here (``run_due``), with a clock the test moves for backoff;
``test_webhooks_serve.py`` runs it inside a real ``lethe serve``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.api.webhooks import HttpSender
from lethe.vault.clock import utcnow
from lethe.vault.model import Caller, Role
from lethe.vault.store.tables import webhook_endpoints, webhook_events
from lethe.vault.webhooks.deadlines import prune_deliveries, sweep_deadlines
from lethe.vault.webhooks.delivery import Backoff, Dispatcher
from lethe.vault.webhooks.guard import DestinationRule
from tests.api.conftest import Api, api_settings, assert_problem, bearer, memory_body
from tests.webhook_receiver import Receiver

BASIS = "gdpr-art17-1a"
ALL = [
    "erasure.status_changed",
    "erasure.reported",
    "access_export.ready",
    "request.due_soon",
    "request.overdue",
]


@pytest.fixture
def api(settings: Settings) -> Iterator[Api]:
    """The app with private destinations allowed (the receiver is on loopback) and its own
    delivery loop and erasure runner out of the way: the tests run them."""
    tuned = api_settings(
        settings, webhook_allow_private=True, webhook_interval_seconds=3600.0, erasure_interval_seconds=3600.0
    )
    with TestClient(create_app(tuned)) as client:
        yield Api(client.app, client)  # type: ignore[arg-type]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


def dispatcher(api: Api, clock: Clock | None = None, allow_private: bool = True) -> Dispatcher:
    c = api.container
    sender = HttpSender(DestinationRule(allow_private=allow_private), timeout=5)
    return Dispatcher(c.uow, c.pseudonyms, sender, Backoff(timedelta(seconds=10), 5), clock or utcnow)


def subscribe(api: Api, url: str, who: dict[str, str], events: list[str] = ALL) -> dict[str, str]:
    r = api.client.post("/v1/admin/webhooks", json={"url": url, "events": events}, headers=who)
    assert r.status_code == 201, r.text
    return r.json()


def test_the_secret_is_shown_once_sealed_at_rest_and_never_listed(api: Api, receiver: Receiver) -> None:
    admin = bearer(api.mint("admin"))
    created = subscribe(api, receiver.url, admin, ["erasure.reported"])
    assert created["secret"].startswith("whsec_")
    assert (
        api.client.post(
            "/v1/admin/webhooks", json={"url": receiver.url, "events": ["nope"]}, headers=admin
        ).status_code
        == 422
    )

    listed = api.client.get("/v1/admin/webhooks", headers=admin).json()["items"]
    assert [e["id"] for e in listed] == [created["id"]] and "secret" not in listed[0]
    with api.container.uow.maintenance("test: the sealed column"), api.container.uow.read() as conn:
        sealed = conn.execute(sa.select(webhook_endpoints.c.sealed_secret)).scalar_one()
    assert created["secret"].encode() not in bytes(sealed)
    assert created["secret"][6:].encode() not in bytes(sealed)

    other = bearer(api.mint("admin", tenant="t2"))
    assert api.client.get("/v1/admin/webhooks", headers=other).json()["items"] == []
    assert_problem(api.client.delete(f"/v1/admin/webhooks/{created['id']}", headers=other), 404)
    agent = bearer(api.mint())
    assert_problem(api.client.get("/v1/admin/webhooks", headers=agent), 403)
    assert api.client.delete(f"/v1/admin/webhooks/{created['id']}", headers=admin).status_code == 204
    assert api.client.get("/v1/admin/webhooks", headers=admin).json()["items"] == []


def test_every_event_is_signed_and_carries_no_content_or_subject_id(api: Api, receiver: Receiver) -> None:
    officer = bearer(api.mint("privacy_officer"))
    receiver.secret = subscribe(api, receiver.url, officer)["secret"]
    subject, content = f"{uuid.uuid4()}@example.com", "Alice prefers oolong tea, secretly"
    agent = bearer(api.mint())
    assert (
        api.client.post(
            "/v1/memories", json=memory_body(content, subject_id=subject), headers=agent
        ).status_code
        == 201
    )
    export = api.client.post("/v1/subject-access-requests", json={"subject_id": subject}, headers=officer)
    assert export.status_code == 200
    filed = api.client.post(
        "/v1/erasure-requests", json={"subject_id": subject, "legal_basis": BASIS}, headers=officer
    )
    request_id = filed.json()["id"]
    api.container.erasure.run_pending()

    delivered = dispatcher(api).run_due()

    assert delivered == len(receiver.received) and all(d.verified for d in receiver.received)
    statuses = [d.event["data"]["status"] for d in receiver.of_type("erasure.status_changed")]
    assert statuses[0] == "received" and "key_destroyed" in statuses and statuses[-1] == "reported"
    (report,) = [d.event["data"] for d in receiver.of_type("erasure.reported")]
    job = api.client.get(f"/v1/erasure-requests/{request_id}", headers=officer).json()
    assert report["request_id"] == request_id and report["report_id"] == job["report_id"]
    assert report["links"]["certificate"] == f"/v1/erasure-reports/{job['report_id']}"
    assert api.client.get(report["links"]["certificate"], headers=officer).status_code == 200
    (ready,) = [d.event["data"] for d in receiver.of_type("access_export.ready")]
    assert ready["export_id"] == export.json()["manifest"]["export_id"]
    ref = api.container.pseudonyms.subject_ref("t1", subject)
    for d in receiver.received:
        for needle in (subject, content, "oolong", ref):
            assert needle not in d.body.decode()


def test_a_receiver_that_fails_twice_gets_the_event_on_the_third_try(api: Api, receiver: Receiver) -> None:
    admin = bearer(api.mint("admin"))
    hook = subscribe(api, receiver.url, admin, ["access_export.ready"])
    receiver.secret, receiver.fail_first = hook["secret"], 2
    officer = bearer(api.mint("privacy_officer"))
    api.client.post("/v1/subject-access-requests", json={"subject_id": "s-1"}, headers=officer)
    clock = Clock()
    worker = dispatcher(api, clock)

    assert worker.run_due() == 0  # first try: 500
    assert worker.run_due() == 0  # not due again before its backoff
    clock.now += timedelta(seconds=10)
    assert worker.run_due() == 0  # second try: 500
    clock.now += timedelta(seconds=19)
    assert worker.run_due() == 0  # the backoff doubled: not due yet
    clock.now += timedelta(seconds=1)
    assert worker.run_due() == 1  # third try

    assert [d.status for d in receiver.received] == [500, 500, 200]
    assert len({d.webhook_id for d in receiver.received}) == 1 and len(receiver.processed) == 1
    (delivery,) = api.client.get(f"/v1/admin/webhooks/{hook['id']}/deliveries", headers=admin).json()["items"]
    assert delivery["state"] == "delivered" and delivery["webhook_id"] == receiver.received[0].webhook_id
    assert [(a["n"], a["status_code"]) for a in delivery["attempts"]] == [(1, 500), (2, 500), (3, 200)]
    assert all(set(a) == {"n", "at", "status_code", "outcome"} for a in delivery["attempts"])


def test_a_replay_sends_the_same_webhook_id_again(api: Api, receiver: Receiver) -> None:
    admin = bearer(api.mint("admin"))
    hook = subscribe(api, receiver.url, admin, ["access_export.ready"])
    receiver.secret = hook["secret"]
    api.client.post(
        "/v1/subject-access-requests", json={"subject_id": "s-2"}, headers=bearer(api.mint("privacy_officer"))
    )
    worker = dispatcher(api)
    assert worker.run_due() == 1
    (delivery,) = api.client.get(f"/v1/admin/webhooks/{hook['id']}/deliveries", headers=admin).json()["items"]

    r = api.client.post(f"/v1/admin/webhooks/{hook['id']}/deliveries/{delivery['id']}/replay", headers=admin)
    assert r.status_code == 202
    assert worker.run_due() == 1

    first, again = receiver.received
    assert again.webhook_id == first.webhook_id and again.body == first.body and again.verified
    assert len(receiver.processed) == 1  # the receiver de-duplicates the replay
    other = bearer(api.mint("admin", tenant="t2"))
    replay = f"/v1/admin/webhooks/{hook['id']}/deliveries/{delivery['id']}/replay"
    assert_problem(api.client.post(replay, headers=other), 404)


def test_a_refused_destination_is_never_contacted(api: Api) -> None:
    """127.0.0.2 with private destinations refused: not subscribable, and an endpoint already
    there (the setting changed since) is never sent to; the attempt says ``refused``."""
    target = Receiver(host="127.0.0.2").start()
    try:
        admin = bearer(api.mint("admin"))
        hook = subscribe(api, target.url, admin, ["access_export.ready"])  # allowed by this app's setting
        target.secret = hook["secret"]
        strict = DestinationRule(allow_private=False)
        refused = api.client.app.state.container.webhooks  # type: ignore[attr-defined]
        refused.rule, kept = strict, refused.rule
        try:
            assert_problem(
                api.client.post("/v1/admin/webhooks", json={"url": target.url, "events": ALL}, headers=admin),
                422,
            )
        finally:
            refused.rule = kept
        api.client.post(
            "/v1/subject-access-requests",
            json={"subject_id": "s-3"},
            headers=bearer(api.mint("privacy_officer")),
        )

        assert dispatcher(api, allow_private=False).run_due() == 0

        assert target.received == []
        (delivery,) = api.client.get(f"/v1/admin/webhooks/{hook['id']}/deliveries", headers=admin).json()[
            "items"
        ]
        assert [(a["status_code"], a["outcome"]) for a in delivery["attempts"]] == [(None, "refused")]
    finally:
        target.stop()


def test_a_redirect_is_not_followed(api: Api, receiver: Receiver) -> None:
    inside = Receiver(host="127.0.0.2").start()
    try:
        admin = bearer(api.mint("admin"))
        hook = subscribe(api, receiver.url, admin, ["access_export.ready"])
        receiver.secret, receiver.redirect_to = hook["secret"], inside.url
        api.client.post(
            "/v1/subject-access-requests",
            json={"subject_id": "s-4"},
            headers=bearer(api.mint("privacy_officer")),
        )

        assert dispatcher(api).run_due() == 0

        assert [d.status for d in receiver.received] == [302] and inside.received == []
        (delivery,) = api.client.get(f"/v1/admin/webhooks/{hook['id']}/deliveries", headers=admin).json()[
            "items"
        ]
        assert delivery["state"] == "pending" and delivery["attempts"][0]["status_code"] == 302
    finally:
        inside.stop()


def test_due_soon_and_overdue_are_each_sent_once(api: Api, receiver: Receiver) -> None:
    officer = bearer(api.mint("privacy_officer"))
    receiver.secret = subscribe(api, receiver.url, officer, ["request.due_soon", "request.overdue"])["secret"]
    filed = api.client.post(
        "/v1/erasure-requests", json={"subject_id": "s-5", "legal_basis": BASIS}, headers=officer
    )
    request_id = filed.json()["id"]  # never run here: it stays open past its due date
    uow = api.container.uow
    now = utcnow()

    assert sweep_deadlines(uow, lambda: now) == 0  # due in a month
    assert sweep_deadlines(uow, lambda: now + timedelta(days=25)) == 1  # due soon
    assert sweep_deadlines(uow, lambda: now + timedelta(days=26)) == 0  # already said
    assert sweep_deadlines(uow, lambda: now + timedelta(days=40)) == 1  # overdue
    assert sweep_deadlines(uow, lambda: now + timedelta(days=41)) == 0
    later = Clock()
    later.now = now + timedelta(days=41)
    dispatcher(api, later).run_due()

    kinds = [(d.event["type"], d.event["data"]["request_id"]) for d in receiver.processed]
    assert kinds == [("request.due_soon", request_id), ("request.overdue", request_id)]


def test_without_the_extra_a_subscription_is_refused_naming_it(api: Api) -> None:
    service = api.container.webhooks
    service.available = False  # as build_webhooks finds it without standardwebhooks or httpx
    body = {"url": "https://hooks.example.com/x", "events": ALL}
    problem = assert_problem(
        api.client.post("/v1/admin/webhooks", json=body, headers=bearer(api.mint("admin"))), 501
    )
    assert "'.[webhooks]'" in problem["detail"]


def test_a_delivery_another_worker_holds_is_not_sent_twice(api: Api, receiver: Receiver) -> None:
    admin = bearer(api.mint("admin"))
    receiver.secret = subscribe(api, receiver.url, admin, ["access_export.ready"])["secret"]
    officer = bearer(api.mint("privacy_officer"))
    api.client.post("/v1/subject-access-requests", json={"subject_id": "s-6"}, headers=officer)
    first, second = dispatcher(api), dispatcher(api)
    with api.container.uow.maintenance("test: the due deliveries"):
        (due,) = first._due()
        assert first._lease(due)  # the first worker is sending it now
        assert not second._lease(due)  # found due a moment ago by the second: not its to send

    assert second.run_due() == 0 and receiver.received == []
    assert first.run_due() == 0  # leased already: its own next pass does not send it again either
    assert receiver.received == []


def test_the_console_shows_each_attempt_and_sends_a_delivery_again(api: Api, receiver: Receiver) -> None:
    from tests.api.test_console import csrf_of, sign_in

    admin_token = api.mint("admin")
    hook = subscribe(api, receiver.url, bearer(admin_token), ["access_export.ready"])
    receiver.secret, receiver.fail_first = hook["secret"], 1
    api.client.post(
        "/v1/subject-access-requests", json={"subject_id": "s-7"}, headers=bearer(api.mint("privacy_officer"))
    )
    worker = dispatcher(api)
    worker.run_due()  # one failed attempt: 500
    assert sign_in(api.client, admin_token).status_code == 303

    shown = api.client.get("/console/webhooks")

    assert shown.status_code == 200
    (sent,) = receiver.received
    assert sent.webhook_id in shown.text and "1: 500 http error" in shown.text
    assert hook["secret"] not in shown.text
    (delivery,) = api.container.webhooks.deliveries(Caller("t1", Role.ADMIN), hook["id"])
    form = {"csrf_token": csrf_of(api.client, "/console/webhooks")}
    replay = f"/console/webhooks/{hook['id']}/deliveries/{delivery.id}/replay"
    assert api.client.post(replay, data=form, follow_redirects=False).status_code == 303
    assert worker.run_due() == 1
    assert [d.webhook_id for d in receiver.received] == [sent.webhook_id] * 2
    assert "2: 200 delivered" in api.client.get("/console/webhooks").text


def test_finished_deliveries_are_forgotten_after_thirty_days_pending_ones_kept(
    api: Api, receiver: Receiver
) -> None:
    admin = bearer(api.mint("admin"))
    hook = subscribe(api, receiver.url, admin, ["access_export.ready"])
    receiver.secret = hook["secret"]
    officer = bearer(api.mint("privacy_officer"))
    api.client.post("/v1/subject-access-requests", json={"subject_id": "s-8"}, headers=officer)
    assert dispatcher(api).run_due() == 1  # delivered
    receiver.accepting = False
    api.client.post("/v1/subject-access-requests", json={"subject_id": "s-9"}, headers=officer)
    dispatcher(api).run_due()  # refused by the receiver: pending, retried later
    uow, now = api.container.uow, utcnow()

    assert prune_deliveries(uow, now + timedelta(days=29)) == 0
    assert prune_deliveries(uow, now + timedelta(days=31)) == 1

    (left,) = api.client.get(f"/v1/admin/webhooks/{hook['id']}/deliveries", headers=admin).json()["items"]
    assert left["state"] == "pending"
    with uow.maintenance("test: the outbox"), uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(webhook_events)).scalar_one() == 1
