#!/usr/bin/env bash
# Runs Lethe on its embedded default (SQLite + local KMS in ./lethe-data): creates the
# virtualenv, installs Lethe, initialises the data dir on first run and serves HTTP.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet --config-settings editable_mode=compat -e .
.venv/bin/lethe init          # creates the store on the first run only
exec .venv/bin/lethe serve "$@"
