"""Private services and `lethe serve` nodes for the multi-node and fault tests.

PostgreSQL and Redis here are private instances on free ports, started for one test module,
so a test can stop or stall them without touching the machine's own services (which other
tests, and other people's runs, are using). OpenBao is the session's dev server
(``tests.conftest_openbao``), which can be paused and resumed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.api.test_serve import free_port, lethe_command

PG_BIN = Path("/usr/lib/postgresql")


def _pg_tool(name: str) -> str:
    found = sorted(PG_BIN.glob(f"*/bin/{name}"))
    if not found:
        pytest.fail(f"PostgreSQL's {name} is not installed")  # this machine kind has it: never skip
    return str(found[-1])


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (trust auth, loopback, a free port) that can be stopped."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="lethe-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        shutil.chown(self.root, "postgres") if os.geteuid() == 0 else None
        self._run(_pg_tool("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, *argv: str) -> None:
        r = subprocess.run([*self._as_postgres, *argv], capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr + r.stdout

    def _options(self) -> list[str]:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        return ["-D", str(self.data), "-o", opts, "-l", str(self.root / "log"), "-w"]

    def start(self) -> None:
        self._run(_pg_tool("pg_ctl"), *self._options(), "start")

    def stop(self) -> None:
        self._run(_pg_tool("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is ended (its advisory locks with it),
        open transactions roll back, and the server is back on the same port."""
        self._run(_pg_tool("pg_ctl"), *self._options(), "-m", "fast", "restart")

    def cleanup(self) -> None:
        subprocess.run(
            [*self._as_postgres, _pg_tool("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """A ``redis-server`` on a free port that keeps nothing on disk; it can be stalled or stopped."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed")  # this machine kind has it: never skip
        argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/tmp")
        import redis

        deadline = time.monotonic() + 20
        while True:
            try:
                if redis.Redis(port=self.port, socket_timeout=0.5).ping():
                    return
            except redis.RedisError:
                pass
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Node:
    """One `lethe serve` process; ``restart`` brings it back on the same port and data dir."""

    name: str
    data_dir: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.data_dir.parent / f"{self.name}.log"

    def start(self, workers: int = 1) -> None:
        self.starts += 1
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    *lethe_command(),
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--workers",
                    str(workers),
                ],
                env={**self.env, "LETHE_DATA_DIR": str(self.data_dir)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.wait_ready()

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None and self.proc.poll() is None, (
                f"{self.name} exited:\n{self.log.read_text()[-3000:]}"
            )
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{self.name} did not become ready"
            time.sleep(0.25)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown, no lease released, requests in flight cut."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def init_nodes(root: Path, env: dict[str, str], names: list[str]) -> list[Node]:
    """Data dirs for each node: `lethe init` on the first, its keys/ copied to the others."""
    dirs = [root / name for name in names]
    init = subprocess.run(
        [*lethe_command(), "init"],
        env={**env, "LETHE_DATA_DIR": str(dirs[0])},
        capture_output=True,
        text=True,
        check=False,
    )
    assert init.returncode == 0, init.stderr
    for d in dirs[1:]:
        shutil.copytree(dirs[0] / "keys", d / "keys")  # the operator's step: one pepper, one signing key
    return [Node(name, d, env) for name, d in zip(names, dirs, strict=True)]


def lethe(
    env: dict[str, str], data_dir: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``lethe ARGS`` as an operator on that node would run it."""
    return subprocess.run(
        [*lethe_command(), *args],
        env={**env, "LETHE_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
