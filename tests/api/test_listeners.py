"""``lethe serve --workers N`` listens on one SO_REUSEPORT socket per worker (api/http/listeners.py).

The sockets here are real loopback sockets; the worker "processes" are the unpickling
that uvicorn's supervisor does for each of them.
"""

from __future__ import annotations

import asyncio
import pickle
import socket

import pytest

from lethe.api.http.listeners import REUSE_PORT, WorkerListener, bind_tcp, reserve

pytestmark = pytest.mark.skipif(not REUSE_PORT, reason="SO_REUSEPORT is Linux and BSD only")


def _accepted(sock: socket.socket) -> int:
    """How many connections wait in the socket's accept queue (taken, then closed)."""
    sock.setblocking(False)
    n = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return n
        conn.close()
        n += 1


def test_every_worker_unpickling_the_listener_gets_its_own_socket_and_a_share_of_the_connections() -> None:
    reserved = reserve("127.0.0.1", 0)
    port = reserved.getsockname()[1]
    listener = WorkerListener("127.0.0.1", port)
    workers = [pickle.loads(pickle.dumps(listener)) for _ in range(2)]
    clients = []
    try:
        for w in workers:
            assert isinstance(w, socket.socket) and w.getsockname()[1] == port
            w.listen(64)
        for _ in range(32):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        counts = [_accepted(w) for w in workers]
    finally:
        for s in [*clients, *workers, reserved]:
            s.close()
    assert sum(counts) == 32
    # One shared socket would let the first worker to wake take all 32; the kernel spreads
    # them by address hash (all 32 on one socket: p = 2 * 2**-32).
    assert min(counts) > 0, counts


def test_a_second_server_cannot_join_the_port_of_a_running_one() -> None:
    first = reserve("127.0.0.1", 0)
    port = first.getsockname()[1]
    worker = pickle.loads(pickle.dumps(WorkerListener("127.0.0.1", port)))
    worker.listen(8)
    try:
        with pytest.raises(OSError):
            reserve("127.0.0.1", port)  # it would set SO_REUSEPORT and take a share
    finally:
        worker.close()
        first.close()


def _nodelay_of_accepted(listener: socket.socket) -> int:
    """TCP_NODELAY of a connection asyncio accepts on ``listener`` (as uvicorn serves it)."""

    async def main() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(seen, 5)
        finally:
            writer.close()
            server.close()

    return asyncio.run(main())


def test_connections_on_a_worker_socket_have_nagle_off() -> None:
    reserved = reserve("127.0.0.1", 0)
    try:
        worker = pickle.loads(pickle.dumps(WorkerListener("127.0.0.1", reserved.getsockname()[1])))
        assert _nodelay_of_accepted(worker) == 1
    finally:
        reserved.close()


def test_a_listener_made_as_uvicorn_makes_it_leaves_nagle_on() -> None:
    """The bug the worker sockets avoid (uvicorn #3149): proto 0, so asyncio skips TCP_NODELAY."""
    plain = socket.socket(socket.AF_INET)  # proto 0, as uvicorn's Config.bind_socket
    plain.bind(("127.0.0.1", 0))
    assert _nodelay_of_accepted(plain) == 0
    assert bind_tcp("127.0.0.1", 0).proto == socket.IPPROTO_TCP
