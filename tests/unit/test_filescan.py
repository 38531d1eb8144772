"""The byte scan finds exactly the needles a file holds, by grep and by Python alike."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe.keys import filescan
from lethe.keys.filescan import find_in_files, greppable
from lethe.vault.erasure.compaction_disk import slices_of


def write_with(tmp: Path, planted: list[bytes], size: int = 3 << 20, seed: int = 1) -> Path:
    rng = random.Random(seed)
    data = bytearray(rng.randbytes(size))
    data[size // 3 : size // 3 + 200_000] = bytes(200_000)  # a long run of zeroed pages
    for i, needle in enumerate(planted):
        at = (i + 1) * size // (len(planted) + 2)
        data[at : at + len(needle)] = needle
    path = tmp / "store.bin"
    path.write_bytes(bytes(data))
    return path


def test_grep_and_python_find_the_same_needles_including_awkward_ones(tmp_path: Path) -> None:
    rng = random.Random(7)
    planted = [rng.randbytes(16) for _ in range(20)] + [b"line\nbreak-needle", b"nul\x00inside!!", b"tea"]
    planted.append(b"green tea with tea")  # holds another needle: left to Python
    absent = [rng.randbytes(16) for _ in range(20)]
    path = write_with(tmp_path, planted)
    needles = planted + absent
    grep = filescan._gnu_grep()
    assert grep is not None, "this machine kind has GNU grep: the fast path must be tested here"
    by_grep = filescan._scan_file(str(path), needles, grep)
    by_python = filescan._scan_in_python(str(path), needles)
    assert by_grep == by_python == list(range(len(planted)))
    assert find_in_files([path], needles)[str(path)] == by_grep  # the child process agrees


@settings(max_examples=50, deadline=None)
@given(st.binary(min_size=40, max_size=300))
def test_ciphertext_slices_avoid_newline_and_nul_where_they_can(ciphertext: bytes) -> None:
    for piece in slices_of(ciphertext):
        assert piece in ciphertext
        body = ciphertext[13:] if len(ciphertext) > 29 else ciphertext
        has_clean_window = any(greppable(body[i : i + 16]) for i in range(max(1, len(body) - 15)))
        assert greppable(piece) or not has_clean_window


@pytest.mark.parametrize("needle", [b"", b"\n", b"a\x00b"])
def test_needles_grep_cannot_take_are_not_greppable(needle: bytes) -> None:
    assert not greppable(needle)


def test_hyperscan_finds_what_python_finds_across_its_window_boundaries(tmp_path: Path, monkeypatch) -> None:
    import mmap

    hs = filescan._hyperscan()
    assert hs is not None, "hyperscan is a dependency: the fast path must be tested here"
    monkeypatch.setattr(filescan, "HS_WINDOW", 16 * mmap.ALLOCATIONGRANULARITY)
    rng = random.Random(3)
    path = write_with(tmp_path, [], size=1 << 20)
    data = bytearray(path.read_bytes())
    planted = [rng.randbytes(16) for _ in range(12)] + [b"line\nbreak-needle", b"nul\x00inside!!"]
    window = filescan.HS_WINDOW
    for i, needle in enumerate(planted):  # straddling a window boundary, or just inside one
        at = (i + 1) * window - (i % len(needle)) if i < 8 else (i + 1) * window + 1000
        data[at : at + len(needle)] = needle
    data[-16:] = planted[0]  # at the very end of the file
    path.write_bytes(bytes(data))
    needles = planted + [rng.randbytes(16) for _ in range(30)]
    by_hyperscan = filescan._scan_file(str(path), needles, None, hs)
    assert by_hyperscan == filescan._scan_in_python(str(path), needles) == list(range(len(planted)))
