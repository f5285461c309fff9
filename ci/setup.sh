#!/usr/bin/env bash
# Sets up everything queue-chaos needs on a Debian-like machine: server binaries and the package.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each backend kind's server package, as the kind declares it (chaos/backends/<kind>/__init__.py).
read -r -a need_debs <<< "$(python3 -m chaos.backends.packages)"
command -v sidekiq >/dev/null 2>&1 || need_debs+=(ruby-sidekiq)
ruby -e 'require "redis/namespace"' >/dev/null 2>&1 || need_debs+=(ruby-redis-namespace)
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 \
  || need_debs+=(libfaketime faketime)
# Docker's engine, for the docker provider and workers in containers (started below, if none runs).
command -v dockerd >/dev/null 2>&1 || need_debs+=(docker.io)
# Headless Chromium (and its WebDriver) for the tests that open report.html and the docs site in a browser.
command -v chromium >/dev/null 2>&1 || need_debs+=(chromium chromium-driver)
if [ ${#need_debs[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_debs[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e ".[test,libraries,docker,docs]"
bash ci/start_docker.sh
# arq pins a redis client the rest outgrow: a virtualenv of its own (targets/arq_redis/README.md).
bash ci/setup_arq.sh
# Python 3.12 and 3.13 beside the machine's 3.11: a virtualenv each for the unit tier (ci/unit_pythons.sh).
bash ci/setup_pythons.sh
