"""Expired plaintext leaves a process's memory on time, whether or not anything asks for it."""

from __future__ import annotations

import gc
import os
import time
import weakref

from lethe.vault.custody import plaintext_expiry
from lethe.vault.custody.keyring import DekCache
from lethe.vault.custody.opened_vectors import OpenedVectors


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


KEY = ("t1", "subject-ref", 1)
OTHER = ("t1", "other-ref", 1)


def test_an_expired_data_key_is_dropped_by_the_sweep_and_a_live_one_stays() -> None:
    clock = Clock()
    cache = DekCache(ttl_seconds=10, clock=clock)
    cache.put(KEY, b"k" * 32)
    clock.now += 6
    cache.put(OTHER, b"o" * 32)
    clock.now += 5  # KEY is 11 s old, OTHER 5 s
    assert cache.drop_expired() == 1
    assert len(cache) == 1 and cache.get(OTHER) == b"o" * 32
    assert cache.newest(*KEY[:2]) is None  # no longer named its subject's newest generation


def test_expired_vectors_and_kept_scopes_are_dropped_by_the_sweep_and_live_ones_stay() -> None:
    clock = Clock()
    opened = OpenedVectors(max_vectors=100, ttl_seconds=10, clock=clock)
    opened.put(KEY, [(("m1", 1, "model"), b"v1"), (("m2", 1, "model"), b"v2")])
    opened.keep_scope(("scope-a",), "token-a", object(), [OTHER], rows=3)
    clock.now += 6
    opened.put(OTHER, [(("m3", 1, "model"), b"v3")])
    opened.keep_scope(("scope-b",), "token-b", object(), [("t1", "third-ref", 1)], rows=4)
    assert opened.held == 2 + 3 + 1 + 4 and opened.kept_scopes == 2
    clock.now += 5  # KEY's vectors and scope-a are 11 s old; OTHER's vector and scope-b 5 s
    assert opened.drop_expired() == 2 + 3
    assert opened.held == 1 + 4 and opened.kept_scopes == 1
    assert opened.kept_scope(("scope-b",), "token-b") is not None
    assert opened.get(OTHER) == {("m3", 1, "model"): b"v3"}


def test_an_idle_process_drops_expired_data_keys_and_vectors_without_being_asked() -> None:
    """Nothing touches the caches after the put: the process's sweeper thread drops them."""
    cache = DekCache(ttl_seconds=0.2)
    opened = OpenedVectors(max_vectors=100, ttl_seconds=0.2)
    cache.put(KEY, b"k" * 32)
    opened.put(KEY, [(("m1", 1, "model"), b"v1")])
    opened.keep_scope(("scope",), "token", object(), [OTHER], rows=2)
    deadline = time.monotonic() + 0.2 + plaintext_expiry.SWEEP_SECONDS * 5
    while (len(cache), opened.held, opened.kept_scopes) != (0, 0, 0):
        assert time.monotonic() < deadline, (len(cache), opened.held, opened.kept_scopes)
        time.sleep(0.05)


def test_watching_a_cache_does_not_keep_it_alive() -> None:
    cache = DekCache(ttl_seconds=10)
    assert cache in plaintext_expiry._caches
    ref = weakref.ref(cache)
    del cache
    gc.collect()
    assert ref() is None


def test_a_cache_of_size_zero_holds_nothing_to_sweep() -> None:
    opened = OpenedVectors(max_vectors=0)
    assert opened not in plaintext_expiry._caches


def test_a_forked_child_sweeps_the_caches_it_inherited() -> None:
    """A server that builds its container and then forks its workers: each child has the
    caches but not the parent's thread, and must still let go of what expires."""
    cache = DekCache(ttl_seconds=0.2)
    cache.put(KEY, b"k" * 32)
    pid = os.fork()
    if pid == 0:  # the child: nothing touches the cache; only its own sweeper can empty it
        deadline = time.monotonic() + 0.2 + plaintext_expiry.SWEEP_SECONDS * 5
        while len(cache) and time.monotonic() < deadline:
            time.sleep(0.05)
        os._exit(0 if len(cache) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
