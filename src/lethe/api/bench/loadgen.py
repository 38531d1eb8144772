"""The HTTP load generator of figure 6, run as ``python -m lethe.api.bench loadgen``.

A separate process, so the load does not share the bench's interpreter; standard library
only (plus ``stats``, ``rss`` and ``wrk``, which are too), so its own footprint stays small and is
reported as it is.
"""

from __future__ import annotations

import http.client
import itertools
import json
import threading
import time
import uuid
from typing import Any

from lethe.api.bench.rss import peak_rss_mb
from lethe.api.bench.stats import percentiles
from lethe.api.bench.wrk import UNIQUE, expected_status


def main(spec: dict[str, Any]) -> None:
    """HTTP load: ``concurrency`` threads, one keep-alive connection and token each.

    Each thread cycles through the prepared requests; a warm-up is discarded, then
    requests are counted until ``seconds`` pass or ``max_requests`` have been sent.
    The result is one JSON line on stdout.
    """
    host, port = spec["host"], spec["port"]
    requests = spec["requests"]
    counter = itertools.count()  # next() is atomic under the GIL
    ok: list[list[float]] = [[] for _ in range(spec["concurrency"])]
    statuses: dict[int, int] = {}
    errors = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(spec["concurrency"] + 1)
    t_warm = [0.0]
    t_end = [0.0]

    def worker(i: int) -> None:
        token = spec["tokens"][i % len(spec["tokens"])]
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection(host, port, timeout=60)
        j = i
        barrier.wait()
        while True:
            now = time.perf_counter()
            if now >= t_end[0]:
                break
            measuring = now >= t_warm[0]
            if measuring and next(counter) >= spec["max_requests"]:
                break
            req = requests[j % len(requests)]
            j += 1
            body = req["body"]
            if body is not None and UNIQUE in body:  # a write's idempotency key: one per request
                body = body.replace(UNIQUE, uuid.uuid4().hex)
            start = time.perf_counter()
            try:
                conn.request(req["method"], req["path"], body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException):
                with lock:
                    errors[0] += 1
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=60)
                continue
            dt = time.perf_counter() - start
            if measuring:
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                expected = expected_status(req)
                if status == expected:
                    ok[i].append(dt)
                else:
                    with lock:
                        errors[0] += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(spec["concurrency"])]
    for t in threads:
        t.start()
    begin = time.perf_counter()
    t_warm[0] = begin + spec["warmup"]
    t_end[0] = t_warm[0] + spec["seconds"]
    barrier.wait()
    for t in threads:
        t.join()
    finished = time.perf_counter()
    elapsed = finished - max(t_warm[0], begin)
    lat = [x for per in ok for x in per]
    print(
        json.dumps(
            {
                "requests": len(lat),
                "errors": errors[0],
                "statuses": {str(k): v for k, v in sorted(statuses.items())},
                "seconds": round(elapsed, 3),
                "requests_per_s": round(len(lat) / elapsed, 1) if elapsed > 0 else 0.0,
                "latency": percentiles(lat),
                "threads": spec["concurrency"],
                "peak_rss_mb": peak_rss_mb(),
            }
        ),
        flush=True,
    )
