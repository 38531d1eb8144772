"""The HTTP load of figure 6 through ``wrk`` (Debian's package), when it is installed.

``wrk`` is a C load generator: on a 2-core machine the Python load generator (``loadgen``)
takes a core's share of CPU from the server it measures, wrk a small fraction of it. The
requests, tokens and counting are the same: each request is the next of the prepared
list with the next token, a warm-up run is discarded, and only answers with the expected
status count as served (every other status is an error). A Lua ``done`` hook prints the
figures as one JSON line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lethe.api.bench.cpu import spent

UNIQUE = "@@KEY@@"  # in a request body: replaced by a fresh value for every request sent

_SCRIPT = """
local requests = %(requests)s
local tokens = %(tokens)s
local expected = %(expected)d
local threads = {}
local n = 0

function setup(thread)
  thread:set("offset", #threads * 7919)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  ok, other = 0, 0
  n = offset
  run = args[1] or "0"
end

function request()
  n = n + 1
  local r = requests[(n %% #requests) + 1]
  local headers = {["Authorization"] = "Bearer " .. tokens[(n %% #tokens) + 1]}
  local body = r.body
  if body then
    headers["Content-Type"] = "application/json"
    -- a write's idempotency key: unique per request, thread and run
    body = string.gsub(body, "@@KEY@@", run .. "-" .. tid .. "-" .. n)
  end
  return wrk.format(r.method, r.path, headers, body)
end

function response(status, headers, body)
  if status == expected then ok = ok + 1 else other = other + 1 end
end

function done(summary, latency, requests)
  local served, wrong = 0, 0
  for _, t in ipairs(threads) do
    served = served + t:get("ok")
    wrong = wrong + t:get("other")
  end
  local e = summary.errors
  io.write(string.format(
    '{"served": %%d, "wrong_status": %%d, "socket_errors": %%d, "seconds": %%.6f, ' ..
    '"p50_ms": %%.3f, "p95_ms": %%.3f, "p99_ms": %%.3f, "max_ms": %%.3f}\\n',
    served, wrong, e.connect + e.read + e.write + e.timeout, summary.duration / 1e6,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000))
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def expected_status(request: dict[str, Any]) -> int:
    """The status a served request of this load answers with (any other is an error)."""
    if "expected" in request:
        return int(request["expected"])
    return 404 if request["method"] == "GET" else 200


def _lua(values: list[Any]) -> str:
    """A Lua table literal of strings or {method, path, body} records (JSON strings are valid Lua)."""
    items = []
    for v in values:
        if isinstance(v, dict):
            body = "nil" if v["body"] is None else json.dumps(v["body"])
            items.append(f"{{method={json.dumps(v['method'])}, path={json.dumps(v['path'])}, body={body}}}")
        else:
            items.append(json.dumps(v))
    return "{" + ", ".join(items) + "}"


def run(
    workdir: Path,
    port: int,
    tokens: list[str],
    requests: list[dict[str, Any]],
    concurrency: int,
    seconds: float,
    warmup: float,
    cpu: dict[str, Callable[[], float | None]] | None = None,
) -> dict[str, Any]:
    """A warm-up, then ``seconds`` of load from ``concurrency`` connections on two threads;
    the result in the shape of ``loadgen``'s (requests, errors, requests_per_s, latency).
    ``cpu``: readers of processes' CPU seconds (``bench.cpu``), read around the measured
    load only; what each spent is the result's ``cpu_seconds``."""
    expected = expected_status(requests[0])
    script = workdir / "wrk-load.lua"
    script.write_text(_SCRIPT % {"requests": _lua(requests), "tokens": _lua(tokens), "expected": expected})
    url = f"http://127.0.0.1:{port}"
    base = ["wrk", "-t2", f"-c{concurrency}", "--timeout", "30s", "-s", str(script)]
    if warmup > 0:
        warm = [*base, f"-d{max(1, round(warmup))}s", url, "--", uuid.uuid4().hex]
        subprocess.run(warm, capture_output=True, check=True)
    with spent(cpu or {}) as cpu_seconds:
        out = subprocess.run(
            [*base, f"-d{max(1, round(seconds))}s", url, "--", uuid.uuid4().hex],
            capture_output=True,
            text=True,
            check=True,
        )
    line = next(x for x in reversed(out.stdout.splitlines()) if x.startswith("{"))
    r = json.loads(line)
    return {
        "requests": r["served"],
        "errors": r["wrong_status"] + r["socket_errors"],
        "statuses": {str(expected): r["served"], "other": r["wrong_status"]},
        "seconds": round(r["seconds"], 3),
        "requests_per_s": round(r["served"] / r["seconds"], 1) if r["seconds"] else 0.0,
        "latency": {k: round(r[k], 3) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")},
        "threads": 2,
        "connections": concurrency,
        "generator": "wrk",
        "peak_rss_mb": None,
        "cpu_seconds": cpu_seconds,
    }
