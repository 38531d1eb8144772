"""Figure 5b, ``replay``: events/s of ``replay.check`` (replay into a scratch database, then
diff) against a plain read of the whole log in the same batches, parsing every payload.
"""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa

from lethe.api.bench.context import RunContext
from lethe.api.bench.stats import ratio
from lethe.vault.store import replay
from lethe.vault.store.tables import events

BATCH = 2000  # as `SqlEventLog.read` pages the log


def measure(ctx: RunContext) -> dict[str, Any]:
    """Over the ``forget`` store as figures 4 and 5a left it."""
    c = ctx.stores["forget"]
    t = time.perf_counter()
    n_read, seq = 0, 1
    with c.uow.read() as conn:
        while True:
            rows = conn.execute(
                sa.select(events).where(events.c.seq >= seq).order_by(events.c.seq).limit(BATCH)
            ).all()
            if not rows:
                break
            for r in rows:
                json.loads(r.payload)
            n_read += len(rows)
            seq = rows[-1].seq + 1
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    report = replay.check(c.uow.engine)
    check_s = time.perf_counter() - t
    per_s = report.events / check_s
    return {
        "events": report.events,
        "identical": report.identical,
        "differences": len(report.differences),
        "seconds": round(check_s, 2),
        "events_per_s": round(per_s, 1),
        "baseline_read_events_per_s": round(n_read / read_s, 1),
        "ratio": ratio(per_s, n_read / read_s),
    }
