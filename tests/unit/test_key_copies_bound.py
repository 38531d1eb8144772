"""The certificate states how long other processes may hold plaintext opened with the key."""

from __future__ import annotations

from datetime import UTC, datetime

from lethe.keys.key_copies import inventory
from lethe.keys.protocol import DestructionReceipt
from lethe.vault.erasure.model import ErasureStep
from lethe.vault.oversight.certificate_wording import OTHER_PROCESSES, other_processes

RECEIPT = DestructionReceipt("k", "local", "2026-12-06T00:00:00Z", True, True, False)


def copies(ttl: float, sweep: float) -> dict:
    return inventory(
        backend="local",
        receipts=[RECEIPT],
        wrapped_in_store=1,
        backups_before=0,
        cache_ttl_seconds=ttl,
        sweep_seconds=sweep,
    )


def destroyed(evidence: dict) -> list[ErasureStep]:
    return [ErasureStep("key_destroyed", datetime(2026, 12, 6, tzinfo=UTC), 7, evidence)]


def test_the_bound_is_the_cache_ttl_and_one_sweep_stated_in_the_caches_fate() -> None:
    inv = copies(300.0, 1.0)
    assert inv["plaintext_bound_seconds"] == 301 and isinstance(inv["plaintext_bound_seconds"], int)
    caches = next(c for c in inv["copies"] if "DEK caches" in c["copy"])
    assert "within 301 s of caching (the 300 s TTL and one 1 s sweep)" in caches["fate"]
    assert copies(2.5, 1.0)["plaintext_bound_seconds"] == 3.5


def test_what_remains_names_the_plaintext_other_processes_held_with_its_bound() -> None:
    entry = other_processes(destroyed({"key_copies": copies(300.0, 1.0)}))
    assert entry is not None and entry["item"] == OTHER_PROCESSES
    assert "freed within 301 s of caching" in entry["why"]


def test_a_job_whose_inventory_recorded_no_bound_claims_none() -> None:
    older = copies(300.0, 1.0)
    del older["plaintext_bound_seconds"]
    assert other_processes(destroyed({"key_copies": older})) is None
    assert other_processes([]) is None
