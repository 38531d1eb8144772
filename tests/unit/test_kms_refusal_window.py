"""A KMS's refusal: final only past the window, and a refusal of one generation leaves the
others' destruction standing (``vault.erasure.refusals``).

``FakeRefusingKms`` wraps the real local KMS and refuses ``destroy_key`` when told to (a
fake is fine here, in a unit test; the real refusal is OpenBao's, in
``tests/integration/test_kms_refusal.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.keys.key_copies import inventory
from lethe.keys.protocol import DestructionReceipt, KeyManager, KmsForbidden
from lethe.vault.audit.certificate_format import result_of
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.erasure import refusals
from lethe.vault.erasure.model import ErasureJob, ErasureStep
from tests.conftest import agent, officer, write_cmd

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
WINDOW = timedelta(days=7)


class FakeRefusingKms:
    """The real local KMS, except that ``destroy_key`` is refused while ``refusing``."""

    def __init__(self, inner: KeyManager) -> None:
        self.inner, self.backend, self.refusing = inner, inner.backend, False

    def destroy_key(self, name: str) -> DestructionReceipt:
        if self.refusing:
            raise KmsForbidden("destroy: the policy denies it")
        return self.inner.destroy_key(name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def job_due_at(when: datetime) -> ErasureJob:
    purged = ErasureStep(Step.DERIVED_PURGED, when, 4, {})
    return ErasureJob(
        "j", "t1", "key_destruction_pending", "gdpr-art17-1a", None, "o", T0, T0, T0, None, None, None,
        [purged], False,
    )  # fmt: skip


def test_a_refusal_is_final_only_once_the_window_since_destruction_was_due_has_passed() -> None:
    job = job_due_at(T0)
    assert not refusals.window_closed(job, T0 + WINDOW - timedelta(microseconds=1), WINDOW)
    assert refusals.window_closed(job, T0 + WINDOW, WINDOW)
    assert refusals.window_closed(job, T0, timedelta(0))  # a zero window: the first refusal is final


def test_key_copies_claim_no_purge_when_a_generation_was_refused() -> None:
    args: dict[str, Any] = dict(
        backend="vault",
        receipts=[],
        wrapped_in_store=1,
        backups_before=2,
        cache_ttl_seconds=300,
        sweep_seconds=1,
    )
    refused = inventory(**args, refused=1)
    kek = refused["copies"][0]
    assert refused["nist_sp_800_88_purge"] is False and "NOT destroyed" in kek["fate"] and kek["count"] == 1
    assert all("useless" not in c["fate"] and "destroyed key" not in c["fate"] for c in refused["copies"])
    receipt = DestructionReceipt("k", "vault", "2026-12-07T00:00:00Z", True, True, False)
    assert inventory(**{**args, "receipts": [receipt]})["nist_sp_800_88_purge"] is True  # the control


def test_a_logged_refusal_counts_as_a_generation_even_without_its_probe() -> None:
    steps: list[dict[str, Any]] = [
        {"name": "tombstoned", "evidence": {"memories_forgotten": 1}},
        {"name": "key_destroyed", "evidence": {"receipts": [], "refused": [{"generation": 2}]}},
        {"name": "verified", "evidence": {"key_probes": [{"generation": 1, "destroyed": True}]}},
    ]
    assert result_of(steps) == ("partial", [("key_material", 2)])
    steps[1]["evidence"]["refused"] = []
    assert result_of(steps) == ("erased", [])  # the control: without the refusal, all confirmed


@pytest.fixture
def refusing(tmp_path: Path) -> Iterator[tuple[Container, FakeRefusingKms]]:
    kms: list[FakeRefusingKms] = []

    def wrap(inner: KeyManager) -> FakeRefusingKms:
        kms.append(FakeRefusingKms(inner))
        return kms[0]

    settings = Settings(data_dir=tmp_path / "data", erasure_kms_refusal_window_seconds=0)
    c = build(settings, create=True, wrap_kms=wrap)
    yield c, kms[0]
    c.close()


def test_a_refused_second_generation_leaves_the_first_destroyed_and_only_it_missing(
    refusing: tuple[Container, FakeRefusingKms],
) -> None:
    c, kms = refusing
    c.memories.write(agent(), write_cmd("alice likes tea"))
    first = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "DSR-1")
    c.erasure.run_pending()
    assert c.reports.load(c.erasure.get(officer(), first.id).report_id or "").parsed()["result"] == "erased"
    c.erasure.reinstate(officer(), "alice@example.com", "returned as a customer")
    c.memories.write(agent(), write_cmd("alice likes coffee now"))
    kms.refusing = True
    second = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "DSR-2")
    c.erasure.run_pending()
    job = c.erasure.get(officer(), second.id)
    assert job.report_id is not None, job.last_error
    report = c.reports.load(job.report_id)
    doc = report.parsed()
    assert [(m["part"], m["generation"], m["final"]) for m in doc["missing"]] == [("key_material", 2, True)]
    probes = next(s for s in doc["steps"] if s["name"] == "verified")["evidence"]["key_probes"]
    assert [(p["generation"], p["destroyed"], p.get("refused")) for p in probes] == [
        (1, True, None),
        (2, False, True),
    ]
    checked = verify_certificate(report.document, c.audit.public_key().pem.encode())
    assert checked.ok, checked.summary()
    assert next(ch for ch in checked.checks if ch.name == "evidence").detail.startswith("1 key(s) refused")
