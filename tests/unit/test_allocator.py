"""The server's allocator settings: two malloc arenas and a fixed mmap threshold (api/http/allocator.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lethe.api.http import allocator


class RecordingLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self.pads: list[int] = []

    def mallopt(self, param, value) -> int:  # type: ignore[no-untyped-def]
        self.calls.append((param.value, value.value))
        return 1

    def malloc_trim(self, pad) -> int:  # type: ignore[no-untyped-def]
        self.pads.append(pad.value)
        return 1


def test_a_server_process_asks_glibc_for_two_arenas_and_a_fixed_128_kib_mmap_threshold(monkeypatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    libc = RecordingLibc()
    assert allocator.tune(libc) == {"MALLOC_ARENA_MAX": True, "MALLOC_MMAP_THRESHOLD_": True}
    assert libc.calls == [(-8, 2), (-3, 128 * 1024)]  # M_ARENA_MAX, M_MMAP_THRESHOLD in <malloc.h>


def test_an_operators_own_malloc_settings_win(monkeypatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    libc = RecordingLibc()
    assert allocator.tune(libc) == {"MALLOC_MMAP_THRESHOLD_": True}
    assert libc.calls == [(-3, 128 * 1024)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_glibc_accepts_the_settings_in_a_real_process() -> None:
    code = "from lethe.api.http import allocator; print(sorted(allocator.tune().items()))"
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[('MALLOC_ARENA_MAX', True), ('MALLOC_MMAP_THRESHOLD_', True)]"


def test_trim_asks_glibc_to_return_every_free_page_and_reports_nothing_to_count() -> None:
    libc = RecordingLibc()
    assert allocator.trim(libc) == 0  # a background job's count: nothing to log every tick
    assert libc.pads == [0]  # malloc_trim(0): keep no padding at the top of the heap


# Frees every other 64 KiB chunk of ~200 MB in the middle of the heap (the last chunk pins its
# top): glibc keeps those pages resident until malloc_trim gives them back. The chunks are
# bytes objects over pymalloc's 512-byte limit and under the fixed 128 KiB mmap threshold,
# so they come from the heap, as a search's lists and columns do.
FRAGMENTED_HEAP = """
from lethe.api.http import allocator
allocator.tune()
def anon_kib():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
chunks = [bytes(65536) for _ in range(3_200)]
del chunks[0:-1:2]
before = anon_kib()
allocator.trim()
print(before - anon_kib())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_gives_the_free_pages_inside_a_real_processs_heap_back_to_the_kernel() -> None:
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", FRAGMENTED_HEAP], capture_output=True, text=True, env=env, check=True
    )
    assert int(out.stdout) > 50_000  # KiB: most of the ~100 MB freed between live chunks
