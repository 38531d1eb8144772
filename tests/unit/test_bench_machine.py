"""The machine section's probes: measured, reported, and absent from older results."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lethe.api.bench import machine
from lethe.api.bench.context import RunContext
from lethe.api.bench.report import _calibration_rows, _speed
from lethe.api.bench.scales import SCALES


def test_the_probes_measure_the_python_loop_and_a_thread_wake_round_trip(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(machine, "PYTHON_LOOP", 20_000)
    monkeypatch.setattr(machine, "ROUND_TRIPS", 200)
    probes = machine.calibration()
    wake = probes["thread_wake_round_trip"]
    assert probes["python_loop_ms"] > 0
    assert wake["cpu_us"] > 0 and wake["wall_us"] > 0
    assert all(math.isfinite(v) for v in (probes["python_loop_ms"], *wake.values()))


def test_every_phase_records_the_machines_speed_at_its_start_and_end(tmp_path: Path) -> None:
    ctx = RunContext(SCALES["small"], "local", tmp_path, 1, lambda _m: None, {"phases": {}})
    with ctx.phase("a phase"):
        pass
    probe = ctx.results["phases"]["a phase"]["python_loop_ms"]
    assert probe["start"] > 0 and probe["end"] > 0
    assert _speed(probe) == f"{probe['start']:,.1f} / {probe['end']:,.1f}" and _speed(None) == "n/a"


def test_the_machine_table_shows_the_probes_and_omits_them_for_results_without() -> None:
    rows = _calibration_rows(
        {"python_loop_ms": 31.25, "thread_wake_round_trip": {"cpu_us": 85.8, "wall_us": 115.5}}
    )
    assert rows == [
        ["Probe: pure-Python loop of 10^6 additions", "31.2 ms of CPU"],
        ["Probe: one thread wakes another and is woken back", "85.8 µs of CPU, 115.5 µs wall"],
    ]
    assert _calibration_rows(None) == []
