"""The bench's child processes: a clean environment, a free loopback port, a stop that waits.

Standard library only. Children never inherit the caller's ``LETHE_``/``VAULT_``/``BAO_``
settings, so a run does not depend on the shell it starts in.
"""

from __future__ import annotations

import os
import socket
import subprocess


def clean_env(**lethe: str) -> dict[str, str]:
    """The environment for a subprocess: no inherited LETHE_/VAULT_/BAO_ settings, then ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LETHE_", "VAULT_", "BAO_"))}
    env.update({f"LETHE_{k.upper()}": v for k, v in lethe.items()})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, wait ``timeout`` seconds, then SIGKILL: a child never outlives the run."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
