"""Figure 7, ``peak_rss``: the peak resident memory of every phase and of the subprocesses.

Each phase resets the high-water mark (``/proc/self/clear_refs``) and reads ``VmHWM`` at
its end; subprocesses report their own. Standard library only (the load generator uses it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lethe.api.bench.subprocesses import descendants


def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark (Linux: ``5`` to ``/proc/self/clear_refs``)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb(pid: int | str = "self", field: str = "VmHWM") -> float | None:
    """``VmHWM`` (or another ``/proc/<pid>/status`` field in kB, ``VmRSS``) of a process in
    MiB, or None where /proc is not there."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError):
        return None
    return None


def peak_rss_tree_mb(pid: int, field: str = "VmHWM") -> float | None:
    """The largest ``VmHWM`` (or ``field``) of a process and its children in MiB (``lethe
    serve --workers N``: the supervisor and its worker processes, each a full server)."""
    peaks = [p for p in (peak_rss_mb(x, field) for x in [pid, *descendants(pid)]) if p is not None]
    return max(peaks) if peaks else None


def measure(results: dict[str, Any]) -> dict[str, Any]:
    """The figure, from what the phases and subprocesses recorded in ``results``."""
    return {
        "start_mb": results["start_rss_mb"],
        "phases": {k: v.get("peak_rss_mb") for k, v in results["phases"].items()},
        "subprocesses": results.get("subprocess_rss_mb", {}),
    }
