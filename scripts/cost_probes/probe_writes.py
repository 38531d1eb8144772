"""Probe: N governed writes through ``MemoryService.write`` on SQLite with the local KMS.

Run by ``scripts/cost_ab.py`` under callgrind, once with N=0 and once with N; the
difference of the two instruction counts is N writes' cost. It uses only the bench's
workload helpers, which earlier checkouts share, so two checkouts run the same probe.
"""

from __future__ import annotations

import random
import sys
import tempfile

from lethe.api.bench.context import store_settings
from lethe.api.bench.workload import agent_caller, warm_subjects, write_command
from lethe.api.bootstrap import build

n = int(sys.argv[1])
with tempfile.TemporaryDirectory() as d:
    c = build(store_settings({"data_dir": d + "/s", "kms": "local"}), create=True)
    caller, rng = agent_caller("bench-writes"), random.Random(11)
    subjects = warm_subjects(c.memories, caller, rng)  # keys made and lazy set-up done in both runs
    for i in range(n):
        c.memories.write(caller, write_command(rng, subjects[i % len(subjects)], f"w/{i}"))
    c.close()
