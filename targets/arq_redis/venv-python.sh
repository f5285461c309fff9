#!/bin/sh
# Runs the arq virtualenv's python (ci/setup_arq.sh builds it; arq 0.28 pins redis<6, the suite runs redis 8).
# target.toml's worker command starts this script, which execs that interpreter in its own place: the process
# the supervisor started is arq's worker itself, with the same pid.
venv="${CHAOS_ARQ_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/queue-chaos/venvs/arq-0.28.0}"
if [ ! -x "$venv/bin/python" ]; then
  echo "arq_redis: no arq virtualenv at $venv; build it with: bash ci/setup_arq.sh" >&2
  exit 2
fi
exec "$venv/bin/python" "$@"
