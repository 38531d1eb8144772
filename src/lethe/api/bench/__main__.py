"""``python -m lethe.api.bench load|loadgen``: the entry points of the bench's subprocesses.

Each reads its spec as JSON on stdin and writes JSON lines on stdout: ``load`` is a
data-generation worker (``datagen.load_main``), ``loadgen`` the HTTP load generator
(``loadgen.main``).
"""

from __future__ import annotations

import json
import sys

from lethe.api.bench import loadgen


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("load", "loadgen"):
        print("usage: python -m lethe.api.bench load|loadgen  (spec as JSON on stdin)", file=sys.stderr)
        return 2
    spec = json.loads(sys.stdin.read())
    if argv[0] == "loadgen":
        loadgen.main(spec)
    else:
        # Lazy: datagen pulls in SQLAlchemy and the whole core; the load generator must not
        # (its peak RSS is reported in figure 7, and it shares the cores with the server).
        from lethe.api.bench.datagen import load_main

        load_main(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
