"""How ``lethe serve --workers N`` listens: one socket per worker process, ``SO_REUSEPORT``.

uvicorn's own multi-worker mode binds one socket in its supervisor and hands it to every
worker. Two things went wrong with that, both measured here with 2 workers and 16
keep-alive connections (``wrk``):

- Connections land on one worker. Each wakeup of asyncio's accept loop takes every
  pending connection, so a burst of clients (a load balancer's pool, ``wrk``'s start)
  often all went to one process: 16 of 16 in one run, and the other core sat idle.
  With one listening socket per process and ``SO_REUSEPORT``, the kernel spreads new
  connections across the processes by a hash of their addresses.
- Nagle's algorithm stayed on (uvicorn issue #3149): uvicorn creates the socket with
  ``proto`` 0, accepted sockets inherit it, and asyncio sets ``TCP_NODELAY`` only when a
  socket says ``IPPROTO_TCP``; every keep-alive request past the first then waited for
  the client's delayed ACK, ~44 ms (1.0 ms with the option set). The sockets made here
  say ``IPPROTO_TCP``.

uvicorn's supervisor (worker health checks, restarts, signals) is kept: it passes its
socket list to each worker process by pickling, and ``WorkerListener`` pickles as "bind a
socket here", so every worker, first start or restart, unpickles a socket of its own.
The supervisor holds a bound, never-listening socket of the same group meanwhile, so the
port stays taken. Any process of the same user that sets ``SO_REUSEPORT`` may join a
group, so a second ``lethe serve`` on the port (another store, say) would silently take a
share of the connections: the supervisor first binds the port *without* the option,
which fails on a taken port, whoever holds it, and only then joins with it.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uvicorn import Config

REUSE_PORT = hasattr(socket, "SO_REUSEPORT")  # Linux and the BSDs; elsewhere uvicorn's own mode

# How long uvicorn's supervisor waits for a worker to answer its ping before it kills the
# worker and starts another (uvicorn's default: 5 s). A worker answers from a thread of its
# own that starts only once the spawned interpreter has imported uvicorn and unpickled its
# sockets, so a worker *starting* on a loaded machine can take longer than 5 s to answer
# its first ping: at load ~11 on 2 cores the supervisor killed `--workers 2`'s starting
# workers again and again, and one node never became ready in 180 s. Once started, the
# thread answers whatever the event loop does (a busy or stuck loop does not stop it), so
# the check only ever catches a process that is frozen or holds Python's lock: waiting a
# minute for those costs little, and no longer kills a worker for being slow to start.
WORKER_HEALTHCHECK_SECONDS = 60
MAX_WORKERS = 64


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which ``taskset`` and container
    cpusets narrow), at most ``MAX_WORKERS``: ``lethe serve``'s default worker count."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: every core the system has
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_WORKERS))


def bind_tcp(host: str, port: int, reuse_port: bool = True) -> socket.socket:
    """A TCP socket bound to (host, port), not yet listening (asyncio listens on it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


@dataclass(frozen=True)
class WorkerListener:
    """Stands in uvicorn's socket list: whoever unpickles it gets a socket of their own,
    bound to the same address with ``SO_REUSEPORT``."""

    host: str
    port: int

    def __reduce__(self) -> tuple[Any, tuple[str, int, bool]]:
        return bind_tcp, (self.host, self.port, True)


def reserve(host: str, port: int) -> socket.socket:
    """The supervisor's bound socket: ``OSError`` if anything holds the port, even a
    ``SO_REUSEPORT`` group (a second server), then the port joined with the option."""
    probe = bind_tcp(host, port, reuse_port=False)
    port = probe.getsockname()[1]  # port 0: the one the system chose
    probe.close()
    return bind_tcp(host, port, reuse_port=REUSE_PORT)


def serve_workers(config: Config) -> None:
    """Run uvicorn's multi-process supervisor on ``config`` (``workers`` > 1), each worker
    on its own ``SO_REUSEPORT`` socket; ``OSError`` if the address cannot be bound."""
    from uvicorn.supervisors import Multiprocess  # the web stack loads only to serve

    reserved = reserve(config.host, config.port)
    try:
        port = reserved.getsockname()[1]
        logging.getLogger("uvicorn.error").info(
            "listening on %s:%d, %d worker processes%s",
            config.host,
            port,
            config.workers,
            ", a socket each (SO_REUSEPORT)" if REUSE_PORT else "",
        )
        # Without SO_REUSEPORT, the workers share the one socket (uvicorn's way, Nagle off).
        listener: Any = WorkerListener(config.host, port) if REUSE_PORT else reserved
        Multiprocess(config, sockets=[listener]).run()
    finally:
        reserved.close()
