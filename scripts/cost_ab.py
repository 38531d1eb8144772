"""Instructions per operation in two checkouts, counted by valgrind's callgrind.

    python scripts/cost_ab.py --base /tmp/prev [--head .] [--n 300] writes search auth

Wall-clock figures on a shared 2-core machine drift by more than 20 % from run to run (the
history of docs/performance.md shows figure 1's ratio between 0.20 and 0.30 for the same
write path), too much to check a 10 % budget. An instruction count does not drift: the same
program and input give the same count whatever else the machine runs. Each probe
(``scripts/cost_probes/``) runs twice per checkout, with 0 and with N operations after the
same set-up; the difference over N is one operation's count. Each checkout needs its own
``.venv`` with Lethe installed (``pip install -e .``). Slow: about 10-15 minutes a run on
a loaded machine (the runs of a checkout go in parallel). What it does not count: time
waiting on disk, locks or another process (the database server's CPU, for instance).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PROBES = Path(__file__).resolve().parent / "cost_probes"
ARGS = {
    "writes": ("probe_writes.py", []),
    "search": ("probe_http.py", ["search"]),
    "auth": ("probe_http.py", ["auth"]),
}


def instructions(checkout: Path, probe: str, n: int) -> int:
    script, extra = ARGS[probe]
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={d}/cg.out",
                str(checkout / ".venv/bin/python"),
                str(PROBES / script),
                *extra,
                str(n),
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=d,
        )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if not found:
        raise SystemExit(f"no instruction count from callgrind:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the earlier checkout")
    parser.add_argument("--head", type=Path, default=Path("."), help="the checkout to compare")
    parser.add_argument("--n", type=int, default=300, help="operations per probe")
    parser.add_argument("probes", nargs="+", choices=sorted(ARGS))
    a = parser.parse_args()
    runs = [(co, p, k) for p in a.probes for co in (a.base, a.head) for k in (0, a.n)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        counts = dict(zip(runs, pool.map(lambda r: instructions(*r), runs), strict=True))
    for p in a.probes:
        base, head = ((counts[(co, p, a.n)] - counts[(co, p, 0)]) / a.n for co in (a.base, a.head))
        print(f"{p}: {base / 1e6:.3f} M instructions an operation before, {head / 1e6:.3f} M after", end="")
        print(f": x{head / base:.3f}")


if __name__ == "__main__":
    main()
