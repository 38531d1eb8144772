"""The bench's child processes: a clean environment, a free loopback port, a stop that waits,
and a process's descendants (whose memory and CPU a figure reads from ``/proc``).

Standard library only. Children never inherit the caller's ``LETHE_``/``VAULT_``/``BAO_``
settings, so a run does not depend on the shell it starts in.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path


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
        port: int = sock.getsockname()[1]  # (host, port) for AF_INET
        return port


def terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, wait ``timeout`` seconds, then SIGKILL: a child never outlives the run."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children's children too), from ``/proc``: a ``lethe serve
    --workers N``'s workers, a PostgreSQL server's backends. Empty where ``/proc`` is not there."""
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                kids = [int(k) for k in Path(f"/proc/{p}/task/{tid}/children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out
