#!/usr/bin/env bash
# The arq adapter's virtualenv (targets/arq_redis/README.md): arq 0.28.0 pins redis<6, while the suite and the
# other libraries run redis 8, so arq gets an interpreter of its own. Built at
#   ${XDG_CACHE_HOME:-$HOME/.cache}/queue-chaos/venvs/arq-0.28.0
# (or $CHAOS_ARQ_VENV when set), with arq==0.28.0 and nothing of the suite: a worker finds the suite's probe
# client through the PYTHONPATH every worker is started with (it is standard library only), and the
# control's helper script needs arq alone. Safe to run again: it builds only what is missing.
set -euo pipefail
venv="${CHAOS_ARQ_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/queue-chaos/venvs/arq-0.28.0}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import arq.version, sys; sys.exit(arq.version.VERSION != "0.28.0")' 2>/dev/null; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "arq==0.28.0"
"$venv/bin/python" -c 'import arq.version; print("arq", arq.version.VERSION, "in", "'"$venv"'")'
