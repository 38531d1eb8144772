"""The state one run shares between its figures: the temporary root, the stores, OpenBao,
the results, and the plumbing every figure uses (phases, stores built from a plain spec).

Exceptions: ``BenchError``: a part that must run cannot (``--kms vault`` without the
``bao`` binary, a worker, the server or the load generator failing).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from lethe.api.bench.machine import python_loop_ms
from lethe.api.bench.openbao import OpenBaoDevServer, find_bao_binary
from lethe.api.bench.rss import peak_rss_mb, reset_peak_rss
from lethe.api.bench.scales import Scale
from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings

PHASE_PROBE = 200_000  # additions of the speed probe around each phase (~10-30 ms)
LOADER_CACHE_KIB = 262_144  # page cache of each data-generation worker (the default is 2 MiB)


class BenchError(Exception):
    """A part of the benchmark that must run could not."""


def store_settings(spec: dict[str, Any]) -> Settings:
    """Settings of a bench store from a plain spec; ``LETHE_*`` variables are ignored so
    that a run does not depend on the shell it starts in."""
    token = spec.get("vault_token")
    return Settings.model_construct(
        data_dir=Path(spec["data_dir"]),
        kms=spec.get("kms", "local"),
        vault_addr=spec.get("vault_addr"),
        vault_token=SecretStr(token) if token else None,
        database_url=spec.get("database_url"),
    )


class RunContext:
    """One run's shared state; figures read and add to it, ``close()`` releases it all."""

    def __init__(
        self,
        scale: Scale,
        kms: str,
        root: Path,
        loaders: int,
        say: Callable[[str], None],
        results: dict[str, Any],
    ) -> None:
        self.scale = scale
        self.kms = kms
        self.root = root
        self.loaders = loaders
        self.previous: Path | None = None  # an earlier release's checkout (``lethe bench --previous``)
        self.soak_seconds = 0.0  # figure 6's load kept on after its runs (``lethe bench --soak-minutes``)
        self.say = say
        self.results: dict[str, Any] = results
        self.progress_every = 15.0
        self.loader_cache_kib = LOADER_CACHE_KIB
        self.openbao: OpenBaoDevServer | None = None
        self.stores: dict[str, Container] = {}
        self.tenants: dict[str, list[str]] = {}
        self.errors: list[str] = []

    @contextmanager
    def phase(self, name: str) -> Iterator[dict[str, Any]]:
        """Time a phase and record the peak RSS this process reached during it, and the
        machine's speed (``machine.python_loop_ms``) at its start and end, outside its time."""
        self.say(name)
        info: dict[str, Any] = {"python_loop_ms": {"start": python_loop_ms(PHASE_PROBE, 1)}}
        reset_peak_rss()
        start = time.perf_counter()
        try:
            yield info
        finally:
            info["seconds"] = round(time.perf_counter() - start, 2)
            info["peak_rss_mb"] = peak_rss_mb()
            info["python_loop_ms"]["end"] = python_loop_ms(PHASE_PROBE, 1)
            self.results["phases"][name] = info

    def figure(self, key: str, measure: Callable[[RunContext], dict[str, Any]]) -> None:
        """Record one figure; a failure is recorded as its result, and the run goes on."""
        try:
            self.results["figures"][key] = measure(self)
        except Exception as exc:
            self.errors.append(f"{key}: {type(exc).__name__}: {exc}")
            self.results["figures"][key] = {"error": f"{type(exc).__name__}: {exc}"}
            self.say(f"[error] {key}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")

    def subprocess_rss(self, name: str, mb: float | None) -> None:
        """Record the peak RSS a subprocess reported (figure 7)."""
        self.results.setdefault("subprocess_rss_mb", {})[name] = mb

    def openbao_spec(self) -> dict[str, str]:
        """How a store or a server reaches the run's OpenBao (which must be running)."""
        assert self.openbao is not None
        return {"vault_addr": self.openbao.addr, "vault_token": self.openbao.token}

    def spec(self, name: str) -> dict[str, Any]:
        """The plain spec of store ``name`` (a data dir under the root), as loaders get it."""
        spec: dict[str, Any] = {"data_dir": str(self.root / name), "kms": self.kms}
        if self.kms == "vault":
            spec |= self.openbao_spec()
        return spec

    def build(self, name: str, kms: str | None = None) -> Container:
        """Create (or open) store ``name``; ``kms="vault"`` puts it on OpenBao whatever ``--kms``."""
        spec = self.spec(name)
        if kms == "vault" and self.kms != "vault":
            spec |= {"kms": "vault", **self.openbao_spec()}
        return build(store_settings(spec), create=True)

    def ensure_openbao(self) -> OpenBaoDevServer | None:
        """The run's OpenBao dev server, started on first use; None without the ``bao`` binary."""
        if self.openbao is None:
            binary = find_bao_binary()
            if binary is None:
                return None
            self.openbao = OpenBaoDevServer(binary).start()
        return self.openbao

    def close(self) -> None:
        """Close every store and stop OpenBao (the runner removes the root)."""
        for c in self.stores.values():
            with suppress(Exception):
                c.close()
        if self.openbao is not None:
            self.openbao.cleanup()
