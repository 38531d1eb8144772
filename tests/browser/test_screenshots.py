"""The console screenshots in docs/console.md come from a command, and the command works."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM

pytestmark = pytest.mark.browser

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_screenshot_command_writes_every_page_the_docs_show(tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists() or shutil.which("pdftoppm") is None:
        pytest.skip("needs Debian's chromium and poppler-utils (scripts/test.sh installs them)")
    command = [sys.executable, "-m", "lethe.api.server.screenshots", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "console.md").read_text()
    shown = {line.split("(console/")[1].split(")")[0] for line in docs.splitlines() if "](console/" in line}
    written = {p.name for p in tmp_path.glob("*.png")}
    assert shown and shown == written
    for png in tmp_path.glob("*.png"):
        data = png.read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, png.name
