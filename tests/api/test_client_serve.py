"""``lethe.client`` against a real ``lethe serve``: every operation, and every problem the
server answers with raised as its own exception (sync and async clients).

One server (SQLite, local KMS) serves the whole module; tokens are minted over HTTP by the
first-run admin token. The per-token rate limit is 8/second, so a burst shows the 429
path: with retries off it is ``RateLimited`` with ``retry_after``, with the default
retries the client waits it out.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lethe.client import (
    AsyncLetheClient,
    Conflict,
    ErasureRequest,
    InvalidRequest,
    LetheClient,
    NotFound,
    OutOfScope,
    Provenance,
    RateLimited,
    Retries,
    TooLarge,
    Unauthenticated,
    Unavailable,
)
from lethe.vault.audit.verify import verify_certificate
from tests.api.conftest import Served, serve_with_tokens

pytestmark = pytest.mark.slow

USER = Provenance("user_statement", "session-1/turn-1")
WEB = Provenance("web_page", "https://example.org/team", url="https://example.org/team")
PREF = "preference"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = serve_with_tokens(tmp_path_factory.mktemp("client"), {"LETHE_RATE_LIMIT": "8/second"})
    yield s
    s.server.stop()


def client(served: Served, role: str, **kw: object) -> LetheClient:
    return LetheClient(served.url, served.tokens[role], timeout=30, **kw)  # type: ignore[arg-type]


def subject() -> str:
    return f"{uuid.uuid4().hex[:8]}@example.com"


def wait_for_report(officer: LetheClient, request_id: str) -> ErasureRequest:
    deadline = time.monotonic() + 60
    while (job := officer.get_erasure_request(request_id)).completed_at is None:
        assert time.monotonic() < deadline, job
        time.sleep(0.3)
    return job


def test_every_agent_and_reviewer_operation(served: Served) -> None:
    alice = subject()
    with client(served, "agent") as agent, client(served, "reviewer") as reviewer:
        assert agent.healthz().status == "ok" and agent.readyz().status == "ready"
        key = uuid.uuid4().hex
        trusted = agent.write_memory(alice, "support", PREF, "Likes green tea", USER, idempotency_key=key)
        assert trusted.status == "active" and trusted.content == "Likes green tea" and trusted.version == 1
        again = agent.write_memory(alice, "support", PREF, "Likes green tea", USER, idempotency_key=key)
        assert again == trusted  # a retried key returns the first result
        untrusted = agent.write_memory(alice, "support", "fact", "Drinks tea at work", WEB, confidence=0.5)
        assert untrusted.status == "quarantined" and untrusted.trust == "untrusted"
        assert agent.get_memory(trusted.id) == trusted
        found = agent.search_memories("tea", "support", subject_id=alice, token_budget=500)
        assert [i.id for i in found.items] == [trusted.id] and found.items[0].score is not None

        promoted = reviewer.promote_memory(untrusted.id, untrusted.version)
        assert (promoted.status, promoted.trust, promoted.version) == ("active", "verified", 2)
        found = agent.search_memories("tea", "support", subject_id=alice, kinds=["fact", "preference"])
        assert {i.id for i in found.items} == {trusted.id, untrusted.id}

        updated = agent.write_memory(
            alice, "support", PREF, "Likes jasmine tea", USER, memory_id=trusted.id, expected_version=1
        )
        assert (updated.id, updated.version, updated.content) == (trusted.id, 2, "Likes jasmine tea")
        correction = agent.write_memory(
            alice, "support", PREF, "Likes black tea", USER, supersedes_id=trusted.id, ttl_seconds=3600
        )
        assert correction.supersedes_id == trusted.id
        assert agent.get_memory(trusted.id).status == "superseded"


def test_every_officer_auditor_and_admin_operation(served: Served) -> None:
    bob, held = subject(), subject()
    with (
        client(served, "agent") as agent,
        client(served, "privacy_officer") as officer,
        client(served, "auditor") as auditor,
        client(served, "admin") as admin,
    ):
        item = agent.write_memory(bob, "support", "fact", "Bob lives in Paris", USER)
        hold = officer.place_legal_hold(held, "litigation, case 42", reference="CASE-42")
        assert hold.lifted_at is None and hold.reference == "CASE-42"
        with pytest.raises(Conflict) as refused:
            officer.request_erasure(held, "gdpr-art17-1a")
        assert refused.value.status == 409 and refused.value.title == "Legal hold active"
        assert officer.lift_legal_hold(hold.id) is None

        accepted = officer.request_erasure(bob, "gdpr-art17-1a", reference="DSR-1")
        assert accepted.status == "received" and accepted.due_at > accepted.received_at
        job = wait_for_report(officer, accepted.id)
        assert job.status == "reported" and job.steps[0].step == "received" and job.reference == "DSR-1"
        assert accepted.id in {j.id for j in officer.list_erasure_requests()}
        assert accepted.id in {j.id for j in auditor.list_erasure_requests(status="reported")}
        assert officer.list_erasure_requests(overdue=True) == []
        with pytest.raises(NotFound):
            agent.get_memory(item.id)
        assert agent.search_memories("Paris", "support", subject_id=bob).items == []

        assert job.report_id is not None
        report = auditor.get_erasure_report(job.report_id)
        assert report.media_type == "application/json" and report.json()["request"]["id"] == accepted.id
        assert accepted.verification_code is not None and accepted.verification_code not in repr(accepted)
        code, pem = accepted.verification_code, auditor.get_audit_public_key().pem.encode()
        assert verify_certificate(report.content, pem, subject_id=bob, verification_code=code).ok
        assert officer.get_erasure_report(job.report_id, format="html").media_type == "text/html"
        assert auditor.get_erasure_report(job.report_id, format="pdf").content.startswith(b"%PDF")
        again = officer.reinstate_subject(bob, "returned as a customer")
        assert again.generation == 2

        checkpoint = auditor.get_audit_checkpoint()
        key = auditor.get_audit_public_key()
        assert checkpoint.startswith(key.origin + "\n") and key.pem.startswith("-----BEGIN PUBLIC KEY-----")
        size = int(checkpoint.splitlines()[1])
        inclusion = auditor.get_inclusion_proof(0, size)
        consistency = auditor.get_consistency_proof(1, size)
        assert inclusion.tree_size == size and consistency.second_root == inclusion.root

        minted = admin.create_token("agent", agent_id="a9", purposes=["support"], description="via client")
        assert minted.token.startswith("lethe_") and "lethe_" not in repr(minted)
        with LetheClient(served.url, minted.token) as fresh:
            assert fresh.search_memories("anything", "support").items == []


def test_each_problem_status_raises_its_exception(served: Served) -> None:
    alice = subject()
    with LetheClient(served.url, token="") as anonymous:
        with pytest.raises(Unauthenticated) as e:
            anonymous.get_memory(str(uuid.uuid4()))
        assert e.value.status == 401 and e.value.type.startswith("urn:lethe:problem:")
    with LetheClient(served.url, "lethe_" + "x" * 43) as wrong, pytest.raises(Unauthenticated):
        wrong.search_memories("tea", "support")
    with client(served, "agent") as agent:
        with pytest.raises(OutOfScope) as e:
            agent.write_memory(alice, "marketing", "fact", "x", USER)
        assert e.value.status == 403
        with pytest.raises(OutOfScope):
            agent.request_erasure(alice, "gdpr-art17-1a")  # an agent token, an officer's endpoint
        with pytest.raises(NotFound):
            agent.get_memory(str(uuid.uuid4()))
        item = agent.write_memory(alice, "support", "fact", "v1", USER)
        with pytest.raises(Conflict) as e:
            agent.write_memory(alice, "support", "fact", "v2", USER, memory_id=item.id, expected_version=7)
        assert e.value.title == "Version conflict"
        with pytest.raises(TooLarge):
            agent.write_memory(alice, "support", "fact", "x" * 20_000, USER)
        with pytest.raises(InvalidRequest) as e:
            agent.write_memory(alice, "support", "no-such-kind", "x", USER)
        assert [err["loc"] for err in e.value.errors] == [["body", "kind"]]
        assert "no-such-kind" not in str(e.value)  # problems never echo what was sent

    with client(served, "agent2", retries=Retries(attempts=1)) as hasty:
        with pytest.raises(RateLimited) as limited:
            for _ in range(20):
                hasty.search_memories("tea", "billing")
        assert limited.value.status == 429 and limited.value.retry_after is not None
        assert 0 < limited.value.retry_after <= 2
    with client(served, "agent2") as patient:  # the default retries wait a 429 out
        for _ in range(12):
            patient.search_memories("tea", "billing")


def test_the_async_client_runs_the_same_operations(served: Served) -> None:
    alice = subject()

    async def scenario() -> None:
        async with AsyncLetheClient(served.url, served.tokens["agent"], timeout=30) as agent:
            item = await agent.write_memory(alice, "support", "preference", "Prefers email", USER)
            assert (await agent.get_memory(item.id)).content == "Prefers email"
            found = await agent.search_memories("email", "support", subject_id=alice)
            assert [i.id for i in found.items] == [item.id]
            with pytest.raises(NotFound):
                await agent.get_memory(str(uuid.uuid4()))
        async with AsyncLetheClient(served.url, served.tokens["auditor"]) as auditor:
            assert (await auditor.get_audit_public_key()).pem

    asyncio.run(scenario())


@pytest.mark.openbao
def test_a_kms_outage_is_unavailable(tmp_path: Path, openbao) -> None:  # type: ignore[no-untyped-def]
    env = {
        "LETHE_KMS": "vault",
        "LETHE_VAULT_ADDR": openbao.addr,
        "LETHE_VAULT_TOKEN": openbao.token,
        "LETHE_KMS_TIMEOUT_SECONDS": "1",
    }
    served = serve_with_tokens(tmp_path, env)
    try:
        with client(served, "agent", retries=Retries(attempts=1)) as agent:
            openbao.pause()
            try:
                with pytest.raises(Unavailable) as e:
                    agent.write_memory(subject(), "support", "fact", "needs a new key", USER)
                assert e.value.status == 503
                with pytest.raises(Unavailable):
                    agent.readyz()
            finally:
                openbao.resume()
            assert agent.readyz().status == "ready"
    finally:
        served.server.stop()
