"""Who holds a lease: one id per runner (the erasure runner, a webhook delivery worker)."""

from __future__ import annotations

import os
import socket
import uuid


def new_runner_id() -> str:
    """``host:pid:nonce``: unique per runner, and tells whether its process is still alive here."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
