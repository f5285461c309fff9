#!/usr/bin/env bash
# A virtualenv per further Python the package supports (3.12 and 3.13; ci/setup.sh installs the package for
# the machine's python3, 3.11) holding the package with its test and docker extras (the unit tier checks the
# docker provider's packages), for the unit tier that ci/unit_pythons.sh runs under each. Built at
#   ${XDG_CACHE_HOME:-$HOME/.cache}/queue-chaos/venvs/py<version>
# from the interpreter `python3 -m chaos.pythons <version>` finds (PATH, then pyenv's versions), as a target's
# [worker] python is found. The package is installed editable from this checkout every time (seconds, once
# its dependencies are in), so a venv kept from an earlier clone runs this clone's code.
set -euo pipefail
cd "$(dirname "$0")/.."
for version in ${CHAOS_PYTHONS:-3.12 3.13}; do
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/queue-chaos/venvs/py$version"
  if [ ! -x "$venv/bin/python" ]; then
    python="$(PYTHONPATH=. python3 -m chaos.pythons "$version")"
    "$python" -m venv "$venv"
  fi
  start=$SECONDS
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[test,docker]"
  echo "python $version: $("$venv/bin/python" --version) in $venv, installed in $((SECONDS - start)) s"
done
