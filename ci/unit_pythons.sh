#!/usr/bin/env bash
# The unit tier under each further Python the package supports (3.12 and 3.13, in the virtualenvs
# ci/setup_pythons.sh builds; .ci/run's fast tier covers the machine's python3, 3.11), timed per interpreter.
# Every interpreter runs even after one fails, so one CI run shows them all; the exit code is 1 if any failed.
# A plain loop, not nox or tox: the virtualenvs outlive a clone (kept under ~/.cache, reinstalled editable
# by setup), and their interpreters are found as a target's [worker] python is (chaos.pythons).
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
for version in ${CHAOS_PYTHONS:-3.12 3.13}; do
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/queue-chaos/venvs/py$version"
  start=$SECONDS
  if ! "$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider -m unit tests/unit; then
    failed+=("$version")
  fi
  echo "unit tier on python $version: $((SECONDS - start)) s"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "unit tier failed on python ${failed[*]}" >&2
  exit 1
fi
