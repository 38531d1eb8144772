"""The bench says how much of a store the page cache held, so a report can tell a slow cold
search from a store the kernel had dropped. The probe asks the real kernel (``mincore``) about
a real file, from a child process; these tests drop and fill that file's cached pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lethe.api.bench import page_cache
from lethe.api.bench.report_search import _resident

linux = pytest.mark.skipif(sys.platform != "linux", reason="posix_fadvise and mincore as Linux has them")


# The fake store file is written, synced and dropped from the cache by a child process, as
# the bench's own probes read stores: this process never opens a store-named file (a process
# that closes a descriptor of a live SQLite file drops its own locks on it).
_MAKE = """
import os, sys
with open(sys.argv[1], "wb") as f:
    f.write(os.urandom(int(sys.argv[2]) << 20))
    f.flush()
    os.fsync(f.fileno())
"""
_DROP = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
finally:
    os.close(fd)
"""


def _child(script: str, *args: str) -> None:
    subprocess.run([sys.executable, "-I", "-c", script, *args], check=True, timeout=60)


def _store(tmp_path: Path, mib: int = 8) -> Path:
    """A data dir holding one store-named file, written to the disk (so its pages can be dropped)."""
    store = tmp_path / "store"
    store.mkdir()
    _child(_MAKE, str(store / "lethe.sqlite3"), str(mib))
    return store


def _drop(store: Path) -> None:
    """Ask the kernel to drop the file's clean cached pages (what a VM's reclaim does unasked)."""
    _child(_DROP, str(store / "lethe.sqlite3"))


@linux
def test_the_share_falls_when_the_kernel_drops_a_stores_pages_and_rises_when_it_is_read(tmp_path):
    store = _store(tmp_path)
    _drop(store)
    dropped = page_cache.resident_share([store])
    page_cache.warm([store])
    warmed = page_cache.resident_share([store])
    assert dropped is not None and warmed is not None
    assert dropped < 0.2 < 0.9 < warmed <= 1.0


@linux
def test_asking_does_not_bring_the_pages_in(tmp_path):
    store = _store(tmp_path)
    _drop(store)
    first = page_cache.resident_share([store])
    again = page_cache.resident_share([store])
    assert first is not None and again is not None and again < 0.2


def test_no_store_files_give_no_share(tmp_path):
    assert page_cache.resident_share([tmp_path]) is None
    assert page_cache.resident_share([tmp_path / "absent"]) is None


def test_the_report_states_the_share_at_each_moment_or_nothing_when_unknown():
    shares = {"after_warmup": 0.998, "large_all_start": 0.91, "large_all_end": 0.684}
    (text,) = _resident(shares)
    said = " ".join(text.split())
    assert "100 % after the stores were read" in said
    assert "91 % when the queries over all its scopes began and 68 % when they ended" in said
    assert _resident({**shares, "large_all_end": None}) == []
    assert _resident(None) == []
