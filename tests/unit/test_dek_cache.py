"""The data-key cache: short-lived, bounded, and a revoked generation is never cached again.

The keyring tests run over an in-memory SQLite and a ``FakeKms`` that counts its calls,
so "served from the cache" and "asked the KMS" are facts, not guesses.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lethe.vault.custody.keyring import DESTROYED, DekCache, SubjectKeyring
from lethe.vault.errors import KeyUnavailable
from lethe.vault.store.db import UnitOfWork, make_engine
from lethe.vault.store.tables import metadata
from tests.unit.fakes import FakeClock, FakeKms

K1, K2, K3 = ("t1", "ref-a", 1), ("t1", "ref-b", 1), ("t1", "ref-c", 1)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_a_key_is_served_until_its_ttl_ends(clock: FakeClock):
    cache = DekCache(ttl_seconds=60, clock=clock.monotonic)
    cache.put(K1, b"dek-1")
    clock.advance(59)
    assert cache.get(K1) == b"dek-1"
    clock.advance(2)
    assert cache.get(K1) is None
    assert len(cache) == 0  # an expired entry is dropped, not kept


def test_the_cache_holds_at_most_max_entries_dropping_the_least_recently_used(clock: FakeClock):
    cache = DekCache(max_entries=2, clock=clock.monotonic)
    cache.put(K1, b"1")
    cache.put(K2, b"2")
    assert cache.get(K1) == b"1"  # K1 is now the most recently used
    cache.put(K3, b"3")
    assert len(cache) == 2
    assert cache.get(K2) is None
    assert cache.get(K1) == b"1" and cache.get(K3) == b"3"


def test_a_revoked_generation_is_dropped_and_never_cached_again(clock: FakeClock):
    cache = DekCache(clock=clock.monotonic)
    cache.put(K1, b"old")
    cache.revoke(*K1)
    assert cache.get(K1) is None
    cache.put(K1, b"old")  # a read that was in flight when the subject was forgotten
    assert cache.get(K1) is None
    cache.put(("t1", "ref-a", 2), b"new")  # the next generation is another key
    assert cache.get(("t1", "ref-a", 2)) == b"new"


@pytest.fixture
def keyring(clock: FakeClock) -> Iterator[SubjectKeyring]:
    engine = make_engine("sqlite://")
    metadata.create_all(engine)
    yield SubjectKeyring(FakeKms(), UnitOfWork(engine), DekCache(ttl_seconds=300, clock=clock.monotonic))
    engine.dispose()


def _row(keyring: SubjectKeyring, ref: str):  # type: ignore[no-untyped-def]
    with keyring.uow.read() as conn:
        return keyring.current(conn, "t1", ref)


def test_a_read_after_a_write_is_served_from_the_cache(keyring: SubjectKeyring):
    key = keyring.key_for_write("t1", "ref-a")
    row = _row(keyring, "ref-a")
    kms: FakeKms = keyring.kms  # type: ignore[assignment]
    before = len(kms.calls)
    dek = keyring.key_for_read("t1", "ref-a", row.generation, row.key_name, row.wrapped_dek, row.state)
    assert dek == key.data_key and len(kms.calls) == before


def test_after_the_ttl_the_kms_unwraps_again(keyring: SubjectKeyring, clock: FakeClock):
    keyring.key_for_write("t1", "ref-a")
    row = _row(keyring, "ref-a")
    kms: FakeKms = keyring.kms  # type: ignore[assignment]
    clock.advance(301)
    keyring.key_for_read("t1", "ref-a", row.generation, row.key_name, row.wrapped_dek, row.state)
    assert kms.calls[-1] == "unwrap_data_key"


def test_a_revoked_generation_goes_to_the_kms_every_time(keyring: SubjectKeyring):
    keyring.key_for_write("t1", "ref-a")
    row = _row(keyring, "ref-a")
    kms: FakeKms = keyring.kms  # type: ignore[assignment]
    keyring.revoke("t1", "ref-a", row.generation)
    for _ in range(2):
        keyring.key_for_read("t1", "ref-a", row.generation, row.key_name, row.wrapped_dek, row.state)
    assert kms.calls[-2:] == ["unwrap_data_key", "unwrap_data_key"]
    assert keyring.cache.get(("t1", "ref-a", row.generation)) is None


def test_a_destroyed_generation_is_unavailable_and_revoked_without_asking_the_kms(keyring: SubjectKeyring):
    keyring.key_for_write("t1", "ref-a")
    row = _row(keyring, "ref-a")
    kms: FakeKms = keyring.kms  # type: ignore[assignment]
    before = len(kms.calls)
    with pytest.raises(KeyUnavailable):
        keyring.key_for_read("t1", "ref-a", row.generation, row.key_name, row.wrapped_dek, DESTROYED)
    assert len(kms.calls) == before
    assert keyring.cache.get(("t1", "ref-a", row.generation)) is None


def test_the_keyring_keeps_the_cache_it_is_given_even_while_empty():
    """An empty ``DekCache`` is falsy (``len`` 0): ``cache or DekCache()`` once dropped the
    configured size and TTL (LETHE_DEK_CACHE_*) for the defaults."""
    cache = DekCache(max_entries=3, ttl_seconds=5)
    assert SubjectKeyring(FakeKms(), None, cache).cache is cache  # type: ignore[arg-type]


def test_newest_serves_the_highest_cached_generation_until_it_leaves_the_cache(clock: FakeClock):
    cache = DekCache(max_entries=2, ttl_seconds=60, clock=clock.monotonic)
    assert cache.newest("t1", "ref-a") is None
    cache.put(("t1", "ref-a", 2), b"g2")
    cache.put(("t1", "ref-a", 1), b"g1")  # a read of an older generation does not take its place
    assert cache.newest("t1", "ref-a") == (2, b"g2")
    cache.revoke("t1", "ref-a", 2)
    assert cache.newest("t1", "ref-a") is None  # never an older generation in its place
    cache.put(("t1", "ref-a", 3), b"g3")
    cache.put(("t1", "ref-b", 1), b"b1")
    cache.put(("t1", "ref-c", 1), b"c1")  # evicts the least recently used: ref-a's
    assert cache.newest("t1", "ref-a") is None and cache.newest("t1", "ref-c") == (1, b"c1")
    clock.advance(61)
    assert cache.newest("t1", "ref-c") is None


def _no_reads(keyring: SubjectKeyring, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse():  # type: ignore[no-untyped-def]
        raise AssertionError("a read transaction was opened")

    monkeypatch.setattr(keyring.uow, "read", refuse)


def test_a_cached_write_key_is_served_without_a_read_transaction(
    keyring: SubjectKeyring, monkeypatch: pytest.MonkeyPatch
):
    first = keyring.key_for_write("t1", "ref-a")
    _no_reads(keyring, monkeypatch)
    assert keyring.key_for_write("t1", "ref-a", cached=True) == first
    with pytest.raises(AssertionError, match="read transaction"):
        keyring.key_for_write("t1", "ref-a", cached=False)


def test_writable_tells_a_live_key_from_a_stale_one_and_a_fenced_subject(keyring: SubjectKeyring):
    from lethe.vault.clock import utcnow
    from lethe.vault.custody.keyring import FORGOTTEN, STALE, WRITABLE
    from lethe.vault.store.tables import forgotten_subjects

    key = keyring.key_for_write("t1", "ref-a")
    name = _row(keyring, "ref-a").key_name
    with keyring.uow.write() as conn:
        assert keyring.writable(conn, "t1", "ref-a", key.generation) == WRITABLE
        assert keyring.writable(conn, "t1", "ref-a", key.generation + 1) == STALE  # no such generation
        keyring.mark_destroyed(conn, [name], utcnow())
        assert keyring.writable(conn, "t1", "ref-a", key.generation) == STALE
    keyring.revoke("t1", "ref-a", key.generation)
    renewed = keyring.key_for_write("t1", "ref-a")  # not fenced: a reinstated subject gets a new key
    assert renewed.generation == key.generation + 1
    with keyring.uow.write() as conn:
        assert keyring.writable(conn, "t1", "ref-a", key.generation) == STALE  # an older cached key
        assert keyring.writable(conn, "t1", "ref-a", renewed.generation) == WRITABLE
        conn.execute(
            forgotten_subjects.insert().values(
                tenant_id="t1", subject_ref="ref-a", forgotten_at="2026-12-01T00:00:00Z", generation=0
            )
        )
        assert keyring.writable(conn, "t1", "ref-a", renewed.generation) == FORGOTTEN
