"""Search store files for byte strings, from a separate process.

Why a child process: POSIX advisory locks belong to a (process, file) pair, and closing
*any* descriptor of a file drops every lock the process holds on it (SQLite's "How To
Corrupt An SQLite Database File", section 2.2). A process that holds SQLite connections
must therefore never ``open()`` + ``close()`` the database, its WAL or its keystore
itself: SQLite in that process would go on believing it holds locks it has lost, and
another process (the CLI beside the server) would write and checkpoint underneath it.
This module's scan runs in a fresh interpreter that holds no SQLite connection, so
its opens and closes cannot touch anyone's locks.

How the child searches, fastest first:
- Hyperscan (the ``hyperscan`` package, a dependency): every needle compiled into one
  matcher, the file mapped a window at a time (windows overlap by the longest
  needle), two windows at a time on two threads. 3-6 GB/s from the page cache whatever
  the number of needles: 1.2 s for a 7 GB store measured here (2 cores), where grep took
  55 s for 171 needles.
- Where it cannot load (a platform without a wheel), GNU ``grep -F`` for needles free of
  newline and NUL bytes: one pass for all of them, but slower the more needles there are
  (0.15 GB/s for 171 needles measured here); NUL-separated records (``-z``) keep grep's
  buffer small even over long runs of zeroed pages.
- Other needles, or a machine without GNU grep: Python, the file in bounded chunks, one
  search per needle.
Either way memory stays small whatever the file size. The child runs as a script
(``python -I filescan.py``) and imports only the standard library and, if it can, hyperscan.

Exceptions: ``FileScanFailed`` when the child cannot run or cannot read a file.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

CHUNK = 4 << 20  # bytes read per step in the child's Python path
HS_WINDOW = 64 << 20  # bytes mapped per step in its hyperscan path (a multiple of the page size)
HS_THREADS = 2  # windows scanned at once: the scan is the longest part of a forget in a large store


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
    found: dict[str, list[int]] = json.loads(proc.stdout)  # what this module's own child printed
    return found


def greppable(needle: bytes) -> bool:
    """Whether ``grep -F -z`` can look for this needle (patterns are newline-separated and
    records NUL-terminated, so neither byte may occur in it)."""
    return bool(needle) and b"\n" not in needle and b"\0" not in needle


def _gnu_grep() -> str | None:
    grep = shutil.which("grep")
    if grep is None:
        return None
    probe = subprocess.run([grep, "--version"], capture_output=True, check=False)
    return grep if probe.returncode == 0 and b"GNU grep" in probe.stdout else None


def _grep_file(grep: str, path: str, needles: list[bytes]) -> set[bytes]:
    """The needles GNU grep finds in the file (fixed strings, bytes as bytes, one pass)."""
    proc = subprocess.run(
        [grep, "-F", "-a", "-o", "-z", "-f", "-", "--", path],
        input=b"\n".join(needles),
        capture_output=True,
        env={"LC_ALL": "C"},
        check=False,
    )
    if proc.returncode == 2:
        raise OSError(f"grep failed on {path}: {proc.stderr.decode(errors='replace')[-200:]}")
    return set(proc.stdout.split(b"\0"))


def _hyperscan() -> Any:
    """The hyperscan module, or None where it cannot be imported or run on this CPU."""
    try:
        import hyperscan

        hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK).compile(expressions=[b"\\x70robe"])
    except Exception:  # not installed, no wheel for this platform, or a CPU it refuses
        return None
    return hyperscan


def _scan_with_hyperscan(hs: Any, path: str, needles: list[bytes]) -> list[int]:
    """Indices of needles in the file: one matcher for all, over overlapping mapped windows."""
    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    db.compile(  # every byte escaped: the literal compiler's binding stops a pattern at a NUL byte
        expressions=[b"".join(b"\\x%02x" % c for c in n) for n in needles],
        ids=list(range(len(needles))),
        elements=len(needles),
        flags=hs.HS_FLAG_SINGLEMATCH,
    )
    found: set[int] = set()

    def on_match(i: int, _start: int, _end: int, _flags: int, _ctx: object) -> None:
        found.add(i)  # set.add holds the GIL: safe from both threads

    overlap = max(len(n) for n in needles) - 1
    size = Path(path).stat().st_size
    # Mapped a window at a time (no copy of the page cache; memory bounded by the windows);
    # this child holds no SQLite connection, so mapping and closing the file is safe here.
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    offsets = list(range(0, size, HS_WINDOW))
    threads = max(1, min(HS_THREADS, os.cpu_count() or 1, len(offsets)))

    def scan(share: list[int]) -> None:  # hyperscan releases the GIL; each thread its own scratch
        scratch = hs.Scratch(db)
        with open(path, "rb") as fh:
            for offset in share:
                length = min(HS_WINDOW + overlap, size - offset)
                with mmap.mmap(fh.fileno(), length, flags=flags, prot=mmap.PROT_READ, offset=offset) as w:
                    db.scan(w, match_event_handler=on_match, scratch=scratch)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(scan, [offsets[t::threads] for t in range(threads)]))
    return sorted(found)


def _scan_file(path: str, needles: list[bytes], grep: str | None = None, hs: Any = None) -> list[int]:
    """Indices of needles found in the file: by hyperscan, else grep where it can, else Python."""
    if not needles:
        return []
    if not Path(path).exists():
        raise FileNotFoundError(path)
    if hs is not None:
        return _scan_with_hyperscan(hs, path, needles)
    # grep -o reports the longest match at a place: a needle inside another is left to Python.
    fast = [
        i
        for i, n in enumerate(needles)
        if grep is not None and greppable(n) and not any(n in other and n != other for other in needles)
    ]
    found: set[int] = set()
    if fast and grep is not None:  # ``fast`` is empty without grep
        hits = _grep_file(grep, path, [needles[i] for i in fast])
        found = {i for i in fast if needles[i] in hits}
    slow = [i for i in range(len(needles)) if i not in set(fast)]
    if slow:
        found |= {slow[j] for j in _scan_in_python(path, [needles[i] for i in slow])}
    return sorted(found)


def _scan_in_python(path: str, needles: list[bytes]) -> list[int]:
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
    hs = _hyperscan()
    grep = None if hs is not None else _gnu_grep()
    answer = {}
    for path in request["files"]:
        try:
            answer[path] = _scan_file(path, needles, grep, hs)
        except FileNotFoundError:
            continue
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    _main()
