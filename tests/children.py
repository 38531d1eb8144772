"""How tests start Lethe in a child process: the command, and an environment that does not
inherit the shell's ``LETHE_*`` settings (a developer's own store must never leak into a test)."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lethe.api.bootstrap import build
from lethe.api.settings import Settings


def lethe_command() -> list[str]:
    """The installed ``lethe`` script beside this interpreter, or the CLI through it."""
    script = Path(sys.executable).parent / "lethe"
    if script.exists():
        return [str(script)]
    found = shutil.which("lethe")
    if found:
        return [found]
    return [sys.executable, "-c", "from lethe.api.cli import app; app(prog_name='lethe')"]


def clean_env(**env: str) -> dict[str, str]:
    """This process's environment without its ``LETHE_*`` variables, then ``env``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LETHE_")} | env


def lethe_env(data_dir: Path, **env: str) -> dict[str, str]:
    """``clean_env`` pointed at the store in ``data_dir`` (unless ``env`` names another)."""
    return clean_env() | {"LETHE_DATA_DIR": str(data_dir)} | env


def python_on_a_new_store(data_dir: Path, script: str) -> Any:
    """Create a store in ``data_dir``, run ``script`` in a fresh interpreter pointed at it,
    and return the JSON of the last line it printed (what a process imported, say)."""
    build(Settings(data_dir=data_dir), create=True).close()
    r = subprocess.run(
        [sys.executable, "-c", script],
        env=lethe_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def released_together(
    target: Callable[..., None], argsets: list[tuple[Any, ...]], timeout: float = 60
) -> list[Any]:
    """Run ``target(barrier, queue, *args)`` in a fresh process for each ``args``, all let
    past a barrier at once; what each put on the queue, in arrival order. Each must exit 0."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(len(argsets)), ctx.Queue()
    procs = [ctx.Process(target=target, args=(barrier, queue, *args)) for args in argsets]
    for p in procs:
        p.start()
    results = [queue.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return results
