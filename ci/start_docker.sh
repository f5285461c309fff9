#!/usr/bin/env bash
# Starts a Docker engine where none answers (containers: the docker provider and workers in containers).
# Debian's docker.io, with vfs storage (it works inside a container, where overlay2 may not) and its data
# in a folder of its own; no image is pulled: the suite builds its own (chaos/containers/images.py).
# Where no engine can start, the container tests skip, saying why, as `chaos doctor` does.
set -uo pipefail
if docker version >/dev/null 2>&1; then
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "ci/start_docker.sh: dockerd is not installed; the container tests will skip" >&2
  exit 0
fi
log="${TMPDIR:-/tmp}/queue-chaos-dockerd.log"
nohup dockerd --storage-driver=vfs --data-root=/var/lib/docker-queue-chaos >"$log" 2>&1 &
for _ in $(seq 1 60); do
  docker version >/dev/null 2>&1 && exit 0
  sleep 0.5
done
echo "ci/start_docker.sh: dockerd did not answer within 30 s (see $log); the container tests will skip" >&2
tail -5 "$log" >&2
exit 0
