"""How tests start Lethe in a child process: the command, and an environment that does not
inherit the shell's ``LETHE_*`` settings (a developer's own store must never leak into a test)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


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
