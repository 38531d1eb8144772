#!/usr/bin/env bash
# Runs Lethe on its embedded default (SQLite + local KMS in ./lethe-data): creates the
# virtualenv, installs Lethe with semantic recall (the embedding model ships inside its
# wheel: nothing is downloaded at run time), initialises the data dir on first run and
# serves HTTP. The first start writes the admin token to ./lethe-data/admin-token (0600;
# the output says where, never the token). A restart with nothing changed skips the install.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.lethe-run-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1) semantic"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x .venv/bin/lethe ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
  .venv/bin/python -m pip install --quiet --config-settings editable_mode=compat -e '.[semantic]'
  echo "$want" > "$stamp"
fi
.venv/bin/lethe init          # creates the store on the first run only
exec .venv/bin/lethe serve "$@"
