"""The opened-vector cache lives and dies with its data key: TTL, bound, revocation."""

from __future__ import annotations

import random

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


S1, S2 = ("t1", "agent", "support", "model", 100), ("t1", "agent", "billing", "model", 100)
S3, S4 = ("t1", "agent", "sales", "model", 100), ("t1", "agent", "legal", "model", 100)


def test_a_kept_scope_is_served_only_under_the_token_it_was_read_under():
    cache = OpenedVectors()
    cache.keep_scope(S1, "token-1", "scope-1", [K1], rows=2)
    assert cache.kept_scope(S1, "token-1") == "scope-1"
    assert cache.kept_scope(S1, "token-2") is None  # the scope changed: not served
    stale = cache.kept_copy(S1)  # but the read that replaces it may take vectors from it
    assert stale is not None and stale.scope == "scope-1"
    cache.keep_scope(S1, "token-2", "scope-1b", [K1], rows=3)  # the new copy replaces it
    assert cache.kept_scope(S1, "token-1") is None and cache.kept_scope(S1, "token-2") == "scope-1b"
    assert cache.held == 3
    cache.keep_scope(S1, "token-3", "scope-1c", [K1], rows=60_000)  # too large to keep: none is
    assert cache.kept_copy(S1) is None and cache.held == 0


def test_a_scope_built_from_a_stale_copy_lives_no_longer_than_the_copys_vectors():
    clock = FakeClock()
    cache = OpenedVectors(ttl_seconds=60, clock=clock.monotonic)
    cache.keep_scope(S1, "token-1", "scope-1", [K1], rows=2)
    clock.advance(50)
    stale = cache.kept_copy(S1)
    assert stale is not None
    cache.keep_scope(S1, "token-2", "scope-1b", [K1], rows=3, not_after=stale.expires)
    clock.advance(9)
    assert cache.kept_scope(S1, "token-2") == "scope-1b"
    clock.advance(2)  # 61 s after the first copy's vectors were opened
    assert cache.kept_scope(S1, "token-2") is None
    cache.keep_scope(S1, "token-2", "scope-1b", [K1], rows=3)
    clock.advance(61)
    assert cache.kept_copy(S1) is None  # past its TTL: nothing to take vectors from
    assert cache.held == 0


def test_keeping_a_scope_drops_its_keys_cached_vectors_which_the_scope_holds_now():
    cache = OpenedVectors()
    cache.put(K1, [vec(1), vec(2)])
    cache.put(K2, [vec(3)])
    cache.keep_scope(S1, "t", "scope-1", [K1], rows=2)
    assert cache.get(K1) == {} and set(cache.get(K2)) == {vec(3)[0]}
    assert len(cache) == 1 and cache.held == 3  # each vector held once


def test_a_kept_scope_goes_with_any_of_its_keys_revoked_or_found_gone_and_is_refused_after():
    cache = OpenedVectors()
    cache.keep_scope(S1, "t", "scope-1", [K1, K2], rows=2)
    cache.keep_scope(S2, "t", "scope-2", [K2], rows=1)
    cache.revoke(K1)
    assert cache.kept_scope(S1, "t") is None and cache.kept_scope(S2, "t") == "scope-2"
    cache.discard(K2)
    assert cache.kept_scope(S2, "t") is None
    cache.keep_scope(S1, "t", "scope-1", [K1, K2], rows=2)  # a search in flight when K1 was forgotten
    assert cache.kept_scope(S1, "t") is None


def test_a_kept_scope_lives_no_longer_than_the_vectors_it_was_built_from():
    clock = FakeClock()
    cache = OpenedVectors(ttl_seconds=60, clock=clock.monotonic)
    cache.put(K1, [vec(1)])
    clock.advance(50)
    cache.keep_scope(S1, "t", "scope-1", [K1], rows=1)
    clock.advance(9)
    assert cache.kept_scope(S1, "t") == "scope-1"
    clock.advance(2)  # 61 s after K1's vectors were opened, 11 s after the scope was kept
    assert cache.kept_scope(S1, "t") is None


def test_kept_scopes_share_the_bound_with_the_vectors_which_go_first():
    cache = OpenedVectors(max_vectors=4)
    K3 = ("t1", "ref-c", 1)
    cache.keep_scope(S1, "t", "scope-1", [K1], rows=2)
    cache.put(K2, [vec(3), vec(4)])  # four rows: within the bound
    assert cache.held == 4
    cache.put(K3, [vec(5)])  # five: the least recently used vectors go (K2's), the scope stays
    assert cache.kept_scope(S1, "t") == "scope-1" and cache.get(K2) == {} and len(cache) == 1
    cache.keep_scope(S3, "t", "scope-3", [K3], rows=2)  # K3's vectors are the scope's now: four
    assert [cache.kept_scope(s, "t") for s in (S1, S3)] == ["scope-1", "scope-3"] and len(cache) == 0
    cache.keep_scope(S4, "t", "scope-4", [K2], rows=2)  # six, and no vector left: an older scope goes
    kept = [cache.kept_scope(s, "t") for s in (S1, S3, S4)]
    assert kept.count(None) == 1 and kept[2] == "scope-4" and cache.held == 4
    cache.keep_scope(S2, "t", "scope-2", [K2], rows=3)  # more than half the bound: never kept
    assert cache.kept_scope(S2, "t") is None


def test_scopes_searched_in_turn_stay_kept_when_their_vectors_would_not_fit_twice():
    # Three scopes of two rows: twelve rows for a bound of eight if each vector were held by
    # the cache and by its scope. Held once, after the first round no search reads its scope
    # again (holding both, with scopes evicted first, made every search a rebuild).
    cache = OpenedVectors(max_vectors=8)
    keys = [("t1", f"ref-{i}", 1) for i in range(3)]

    def search(i: int) -> bool:
        """Serve scope i as a search does; whether it had to be read again."""
        if cache.kept_scope(("s", i), "t") is not None:
            return False
        cache.get(keys[i])
        cache.put(keys[i], [vec(2 * i), vec(2 * i + 1)])
        cache.keep_scope(("s", i), "t", f"scope-{i}", [keys[i]], rows=2)
        return True

    rebuilds = [sum(search(i) for i in range(3)) for _ in range(4)]
    assert rebuilds == [3, 0, 0, 0], rebuilds
    assert len(cache) == 0 and cache.held == 6


def test_scopes_searched_in_turn_that_do_not_all_fit_are_mostly_served_kept():
    # Six scopes of two rows in a bound of ten, searched in turn: one must go at each round.
    # Evicting the least recently used one evicts the scope the next search needs, so every
    # search read its scope again (6 a round); a random one of the older three quarters leaves
    # most of them kept.
    cache = OpenedVectors(max_vectors=10, rng=random.Random(7))

    def search(i: int) -> bool:
        if cache.kept_scope(("s", i), "t") is not None:
            return False
        cache.keep_scope(("s", i), "t", f"scope-{i}", [("t1", f"ref-{i}", 1)], rows=2)
        return True

    rebuilds = [sum(search(i) for i in range(6)) for _ in range(50)]
    assert rebuilds[0] == 6 and cache.held == 10
    assert sum(rebuilds[1:]) <= 3 * 49, rebuilds  # at most half of the searches read their scope


def test_a_hot_scope_stays_kept_while_others_come_and_go():
    cache = OpenedVectors(max_vectors=10, rng=random.Random(7))
    hot = ("s", "hot")
    cache.keep_scope(hot, "t", "hot", [K1], rows=2)
    for i in range(200):  # a new scope each time, the hot one searched in between
        assert cache.kept_scope(hot, "t") == "hot", i
        cache.keep_scope(("s", i), "t", f"scope-{i}", [K2], rows=2)
