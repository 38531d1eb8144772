"""A pytest plugin: private PostgreSQL and Redis servers, one of each per test module.

The machine's own PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) serve every other
test and other people's runs, so a test that stops, restarts or stalls a service takes a
private one instead: ``private_postgres`` (a throwaway cluster: trust auth, loopback, a free
port; run as the ``postgres`` user when the tests run as root) and ``private_redis``
(``redis-server`` on a free port, nothing kept on disk). Both are module-scoped: the tests
of one module share them, and they are gone when the module ends. The classes live in
``tests.torture.cluster``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.torture.cluster import PrivatePostgres, PrivateRedis


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PrivatePostgres]:
    """A running private PostgreSQL (``.url`` to its ``postgres`` database); the test may
    ``stop``, ``start`` or ``restart`` it."""
    pg = PrivatePostgres()
    try:
        pg.start()
        yield pg
    finally:
        pg.cleanup()


@pytest.fixture(scope="module")
def private_redis() -> Iterator[PrivateRedis]:
    """A running private Redis (``.url``); the test may ``stop`` and ``start`` it again on the
    same port, or stall it with ``signal``."""
    redis = PrivateRedis()
    try:
        redis.start()
        yield redis
    finally:
        redis.stop()
