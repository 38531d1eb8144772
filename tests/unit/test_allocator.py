"""The server's allocator settings: two malloc arenas and a fixed mmap threshold (api/http/allocator.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lethe.api.http import allocator


class RecordingLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, param, value) -> int:  # type: ignore[no-untyped-def]
        self.calls.append((param.value, value.value))
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
