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
  echo "installing Lethe into .venv (the first time takes a minute or two)"
  # pip's and setuptools' own warnings (the compat editable mode's notice, a root user's)
  # would bury the first start's few lines: kept in .venv/install.log, shown if it fails.
  if ! { .venv/bin/python -m pip install --quiet --upgrade pip &&
         .venv/bin/python -m pip install --quiet --config-settings editable_mode=compat -e '.[semantic]'; } \
       > .venv/install.log 2>&1; then
    cat .venv/install.log >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
.venv/bin/lethe init          # creates the store on the first run only
exec .venv/bin/lethe serve "$@"
