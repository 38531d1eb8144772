"""Search store files for byte strings, from a separate process.

Why a child process: POSIX advisory locks belong to a (process, file) pair, and closing
*any* descriptor of a file drops every lock the process holds on it (SQLite's "How To
Corrupt An SQLite Database File", section 2.2). A process that holds SQLite connections
must therefore never ``open()`` + ``close()`` the database, its WAL or its keystore
itself: SQLite in that process would go on believing it holds locks it has lost, and
another process (the CLI beside the server) would write and checkpoint underneath it.
This module's scan runs in a fresh interpreter that holds no SQLite connection, so
its opens and closes cannot touch anyone's locks.

The child reads each file in bounded chunks (with an overlap of the longest needle),
so its memory stays small whatever the file size. It imports nothing but the standard
library and runs as a script (``python -I filescan.py``), so it needs no installed package.

Exceptions: ``FileScanFailed`` when the child cannot run or cannot read a file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

CHUNK = 4 << 20  # bytes read per step in the child


class FileScanFailed(Exception):
    """The scan could not be completed; absence was not shown."""


def find_in_files(
    paths: Sequence[Path], needles: Sequence[bytes], timeout: float = 600.0
) -> dict[str, list[int]]:
    """For each existing file, the indices of ``needles`` found in it (an empty list: none).

    Files that do not exist are left out of the answer. Runs in a child process.
    """
    request = {"files": [str(p) for p in paths], "needles": [n.hex() for n in needles if n]}
    if not request["needles"] or not request["files"]:
        return {str(p): [] for p in paths if Path(p).exists()}
    try:
        proc = subprocess.run(
            [sys.executable, "-I", str(Path(__file__).resolve())],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FileScanFailed(f"the byte scan could not run ({type(exc).__name__})") from exc
    if proc.returncode != 0:
        raise FileScanFailed(f"the byte scan failed: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout)


def _scan_file(path: str, needles: list[bytes]) -> list[int]:
    """Indices of needles in the file, reading it in chunks that overlap by the longest needle."""
    overlap = max(len(n) for n in needles) - 1
    found: set[int] = set()
    tail = b""
    with open(path, "rb") as fh:
        while len(found) < len(needles):
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            window = tail + chunk
            found.update(i for i, n in enumerate(needles) if i not in found and n in window)
            tail = window[-overlap:] if overlap else b""
    return sorted(found)


def _main() -> None:
    request = json.loads(sys.stdin.read())
    needles = [bytes.fromhex(n) for n in request["needles"]]
    answer = {}
    for path in request["files"]:
        try:
            answer[path] = _scan_file(path, needles)
        except FileNotFoundError:
            continue
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    _main()
