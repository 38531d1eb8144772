"""The deployment's rule on webhook destinations (no server-side request forgery), with a
resolver the test controls: refused addresses are never contacted, whatever DNS answers."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

import httpx
import pytest

from lethe.api.webhooks import HttpSender
from lethe.vault.errors import DestinationRefused
from lethe.vault.webhooks.guard import DestinationRule, refused
from tests.webhook_receiver import Receiver

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
PUBLIC = "93.184.216.34"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.2", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
        "::1", "fe80::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "2002:7f00:1::",
    ],
)  # fmt: skip
def test_loopback_private_link_local_and_metadata_addresses_are_refused(address: str) -> None:
    assert refused(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", [PUBLIC, "2606:4700::6810:84e5"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert not refused(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.2:8080/hook",
        "http://localhost/hook",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "ftp://hooks.example.com/",
        "https://user:pw@hooks.example.com/",
    ],
)
def test_a_subscription_naming_a_refused_destination_is_refused(url: str) -> None:
    with pytest.raises(DestinationRefused):
        DestinationRule().check_url(url)


def test_the_private_setting_allows_loopback() -> None:
    assert DestinationRule(allow_private=True).target("http://127.0.0.2:8080/h?x=1").address == "127.0.0.2"


class Resolver:
    """DNS answers in turn: the last one repeats."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@pytest.fixture
def inside() -> Iterator[Receiver]:
    r = Receiver(host="127.0.0.2", secret=SECRET).start()
    yield r
    r.stop()


def test_a_name_resolving_to_a_refused_address_is_never_contacted(inside: Receiver) -> None:
    port = inside.url.split(":")[2].split("/")[0]
    sender = HttpSender(DestinationRule(resolver=Resolver(["127.0.0.2"])))

    sent = sender.send(f"http://hooks.test:{port}/hook", SECRET, "msg_1", b"{}")

    assert (sent.status_code, sent.outcome) == (None, "refused")
    assert inside.received == []


def test_a_name_with_one_refused_address_among_its_answers_is_refused(inside: Receiver) -> None:
    port = inside.url.split(":")[2].split("/")[0]
    sender = HttpSender(DestinationRule(resolver=Resolver([PUBLIC, "127.0.0.2"])))

    assert sender.send(f"http://hooks.test:{port}/hook", SECRET, "msg_1", b"{}").outcome == "refused"
    assert inside.received == []


def test_a_dns_answer_that_changes_cannot_move_the_connection(inside: Receiver) -> None:
    """Checked as public, then rebound to 127.0.0.2: the attempt connects to the address it
    checked (one resolution per attempt), and the next attempt is refused before connecting."""
    port = inside.url.split(":")[2].split("/")[0]
    resolver = Resolver([PUBLIC], ["127.0.0.2"])
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    sender = HttpSender(DestinationRule(resolver=resolver), transport=httpx.MockTransport(record))
    url = f"https://hooks.test:{port}/hook"

    first = sender.send(url, SECRET, "msg_1", b"{}")
    second = sender.send(url, SECRET, "msg_1", b"{}")

    assert first.ok and second.outcome == "refused" and resolver.calls == 2
    (request,) = seen
    assert request.url.host == PUBLIC and request.headers["host"] == f"hooks.test:{port}"
    assert request.extensions["sni_hostname"] == "hooks.test"  # TLS checks the name's certificate
    assert inside.received == []


def test_a_redirect_toward_a_refused_address_is_not_followed(inside: Receiver) -> None:
    outside = Receiver(secret=SECRET, redirect_to=inside.url).start()
    try:
        rule = DestinationRule(allow_private=True)  # the first hop is on loopback too, in a test
        sent = HttpSender(rule).send(outside.url, SECRET, "msg_1", b"{}")
    finally:
        outside.stop()
    assert (sent.status_code, sent.outcome) == (302, "http_error")
    assert [d.status for d in outside.received] == [302] and inside.received == []
