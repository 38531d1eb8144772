"""A real ``lethe serve``: no connection is held for ever, and a hang-up is not a 500.

- Request headers must be complete within ``LETHE_HEADER_READ_TIMEOUT_SECONDS`` of the
  connection's start (or of the previous response): ten sockets with half-sent headers, and
  one dribbling a byte at a time, are closed by then; a complete request is served, and a
  keep-alive connection that pauses less than the deadline between requests keeps working.
- ``GET /mcp`` is a 405 (``Allow: POST``): the stateless transport streams nothing, and an
  event stream held open per request was an easy way to pin sockets; POST still serves.
- A client that hangs up mid-body is logged as status 499 (client closed request), not 500.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api.test_serve import Server, start_server

pytestmark = pytest.mark.slow
HEADER_TIMEOUT = 1.0
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(
        tmp_path_factory.mktemp("limits"), {"LETHE_HEADER_READ_TIMEOUT_SECONDS": str(HEADER_TIMEOUT)}
    )
    yield srv
    srv.stop()


def connect(server: Server) -> socket.socket:
    url = urlsplit(server.url)
    return socket.create_connection((url.hostname, url.port), timeout=HEADER_TIMEOUT + 5)


def closed_after(sock: socket.socket, started: float) -> float:
    """Seconds from ``started`` until the server closed ``sock`` (what it sent is ignored)."""
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        raise AssertionError("the server held the connection past the deadline") from None
    return time.monotonic() - started


def test_sockets_with_unfinished_headers_are_closed_within_the_timeout(server: Server) -> None:
    started = time.monotonic()
    socks = [connect(server) for _ in range(10)]
    try:
        for sock in socks:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200  # others are served
        waited = [closed_after(sock, started) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert max(waited) < HEADER_TIMEOUT + 2, waited


def test_dribbling_header_bytes_does_not_extend_the_deadline(server: Server) -> None:
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        sock.settimeout(0.2)
        closed = False
        while time.monotonic() - started < HEADER_TIMEOUT + 3:
            try:
                sock.sendall(b"X")
                if sock.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:  # reset while sending: closed
                closed = True
                break
        assert closed and time.monotonic() - started < HEADER_TIMEOUT + 2


def read_response(sock: socket.socket) -> bytes:
    """One whole response (its head, then its Content-Length of body), however TCP splits it:
    a part left unread would be taken for the next response's start."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, "closed before the response's head"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:])
    length = int(next(v for k, v in fields.items() if k.strip().lower() == b"content-length"))
    while len(body) < length:
        chunk = sock.recv(4096)
        assert chunk, "closed inside the response's body"
        body += chunk
    return head


def test_a_keep_alive_connection_that_asks_in_time_is_served_throughout(server: Server) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with connect(server) as sock:
        for _ in range(3):
            sock.sendall(request)
            assert read_response(sock).startswith(b"HTTP/1.1 200")
            time.sleep(HEADER_TIMEOUT * 0.6)  # under the deadline each time, over it in total


def test_get_mcp_is_405_and_holds_no_stream(server: Server) -> None:
    admin = {"Authorization": f"Bearer {server.first_admin_token()}"}
    auditor = httpx.post(f"{server.url}/v1/admin/tokens", json={"role": "auditor"}, headers=admin, timeout=30)
    token = {"Authorization": f"Bearer {auditor.json()['token']}"}
    # The whole body is read and the response has ended (a held stream would hang this read
    # until its timeout): no event stream, a complete problem document.
    with httpx.stream("GET", f"{server.url}/mcp", headers={**MCP_HEADERS, **token}, timeout=30) as r:
        body = r.read()
        assert r.is_stream_consumed and r.is_closed
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert "text/event-stream" not in r.headers["content-type"] and "stateless" in json.loads(body)["detail"]
    listed = httpx.post(
        f"{server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**MCP_HEADERS, **token},
        timeout=30,
    )
    assert listed.status_code == 200 and listed.json()["result"]["tools"]


def access_lines(server: Server) -> list[dict[str, object]]:
    lines = []
    for line in server.lines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("logger") == "lethe.access":
                lines.append(record)
    return lines


def test_a_client_hanging_up_mid_body_is_logged_as_499_not_500(server: Server) -> None:
    before = len(access_lines(server))
    with connect(server) as sock:
        sock.sendall(
            b"POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n" + b'{"content"'
        )
        time.sleep(0.3)
    deadline = time.monotonic() + 10
    while len(access_lines(server)) == before:
        assert time.monotonic() < deadline, "no access line for the hung-up request"
        time.sleep(0.1)
    hung_up = access_lines(server)[before:]
    assert [(x["method"], x["status"]) for x in hung_up] == [("POST", 499)]
    assert not any("unhandled error" in line for line in server.lines())
    # A request that is answered keeps its real status (the control).
    httpx.post(f"{server.url}/v1/memories", json={"content": "x"}, timeout=5)
    deadline = time.monotonic() + 10
    while len(access_lines(server)) < before + 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert access_lines(server)[before + 1]["status"] == 401


def test_a_header_timeout_outside_its_bounds_is_refused(tmp_path: Path) -> None:
    from lethe.api.settings import Settings

    for seconds in (0, -1, 3601):
        with pytest.raises(ValueError, match="header_read_timeout_seconds"):
            Settings(data_dir=tmp_path, header_read_timeout_seconds=seconds)
