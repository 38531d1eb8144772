"""The opened-vector cache lives and dies with its data key: TTL, bound, revocation."""

from __future__ import annotations

from lethe.vault.custody.opened_vectors import OpenedVectors
from tests.unit.fakes import FakeClock

K1, K2 = ("t1", "ref-a", 1), ("t1", "ref-b", 1)


def vec(i: int) -> tuple[tuple[str, int, str], bytes]:
    return (f"m{i}", 1, "model"), bytes([i]) * 8


def test_opened_vectors_expire_with_the_ttl_of_the_key_that_opened_them():
    clock = FakeClock()
    cache = OpenedVectors(ttl_seconds=60, clock=clock.monotonic)
    cache.put(K1, [vec(1)])
    clock.advance(30)
    cache.put(K1, [vec(2)])  # joins the entry: it does not restart its clock
    clock.advance(29)
    assert set(cache.get(K1)) == {("m1", 1, "model"), ("m2", 1, "model")}
    clock.advance(2)
    assert cache.get(K1) == {} and len(cache) == 0


def test_the_cache_holds_at_most_max_vectors_dropping_the_least_recently_used_subject():
    cache = OpenedVectors(max_vectors=3)
    cache.put(K1, [vec(1), vec(2)])
    cache.put(K2, [vec(3)])
    cache.get(K1)  # K1 is now the most recently used
    cache.put(K2, [vec(4)])  # four vectors: the least recently used subject goes whole
    assert cache.get(K1) == {} and len(cache) == 2 and set(cache.get(K2)) == {vec(3)[0], vec(4)[0]}


def test_a_revoked_key_drops_its_vectors_and_never_caches_them_again():
    cache = OpenedVectors()
    cache.put(K1, [vec(1)])
    cache.put(K2, [vec(2)])
    cache.revoke(K1)
    cache.put(K1, [vec(3)])  # a search in flight when the subject was forgotten
    assert cache.get(K1) == {} and cache.get(K2) == {vec(2)[0]: vec(2)[1]} and len(cache) == 1


def test_a_cache_of_size_zero_holds_nothing():
    cache = OpenedVectors(max_vectors=0)
    cache.put(K1, [vec(1)])
    assert cache.get(K1) == {} and len(cache) == 0


def test_a_scope_is_warm_only_while_the_cache_holds_every_subject_key_it_was_read_under():
    clock = FakeClock()
    cache = OpenedVectors(max_vectors=2, ttl_seconds=60, clock=clock.monotonic)
    scope = ("t1", "agent-1", "support", "model")
    assert not cache.scope_is_warm(scope)
    cache.put(K1, [vec(1)])
    cache.put(K2, [vec(2)])
    cache.note_scope(scope, [K1, K2])
    assert cache.scope_is_warm(scope)
    cache.put(("t1", "ref-c", 1), [vec(3)])  # pushes K1's vectors out
    assert not cache.scope_is_warm(scope)  # its next search reads the ciphertext with its rows
    cache.put(K1, [vec(1)])  # back, and K2's go: still cold
    assert not cache.scope_is_warm(scope)
    cache.note_scope(scope, [K1])  # read again, now under K1 alone
    assert cache.scope_is_warm(scope)
    clock.advance(61)
    assert not cache.scope_is_warm(scope)
