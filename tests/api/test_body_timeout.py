"""A half-sent request body is not held forever: a real ``lethe serve`` answers 408 once
the body read timeout passes, closes that connection, and keeps serving everyone else."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from lethe.api.settings import Settings
from tests.api.test_serve import start_server

TIMEOUT_SECONDS = 1.0


def _read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data


def test_a_half_sent_body_gets_a_408_within_the_timeout_and_the_server_serves_on(tmp_path: Path) -> None:
    server = start_server(tmp_path, {"LETHE_BODY_READ_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS)})
    try:
        url = urlsplit(server.url)
        head = (
            b"POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        )
        with socket.create_connection((url.hostname, url.port), timeout=15) as sock:
            sock.sendall(head + b'{"content"')  # 10 of the 100 bytes promised
            started = time.monotonic()
            # While that body is pending, other requests are served.
            assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
            try:
                reply = _read_until_closed(sock)
            except TimeoutError:
                raise AssertionError("the server held the half-sent request without answering") from None
            elapsed = time.monotonic() - started
        status, _, rest = reply.partition(b"\r\n")
        headers, _, body = rest.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 408"), reply[:200]
        assert TIMEOUT_SECONDS * 0.9 <= elapsed < TIMEOUT_SECONDS + 5
        fields = {
            k.strip().lower(): v.strip() for k, _, v in (h.partition(b":") for h in headers.split(b"\r\n"))
        }
        assert fields[b"content-type"].startswith(b"application/problem+json")
        assert fields[b"connection"].lower() == b"close"
        problem = json.loads(body)
        assert (problem["status"], problem["title"]) == (408, "Request timeout")
        assert "content" not in problem["detail"]
        # Afterwards the server still answers, a full request included.
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        r = httpx.post(f"{server.url}/v1/memories", json={"content": "x"}, timeout=5)
        assert r.status_code == 401
    finally:
        server.stop()


@pytest.mark.parametrize("seconds", [0, -1, 3601])
def test_a_body_read_timeout_outside_its_bounds_is_refused_at_start_up(
    tmp_path: Path, seconds: float
) -> None:
    with pytest.raises(ValueError, match="body_read_timeout_seconds"):
        Settings(data_dir=tmp_path, body_read_timeout_seconds=seconds)
