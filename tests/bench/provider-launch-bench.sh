#!/bin/bash
# The node's launch path through the process provider and the container
# provider, side by side in one run (issue 48), as docs/performance.md runs
# it: builds provider-launch-bench, starts the test container engine
# (packaging/container-test-engine.sh: rootful podman, as root), runs 100
# launches through each, and stops the engine. Extra arguments go to the
# benchmark (--launches N).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash packaging/setup-deps.sh >/dev/null
BUILD_TARGET=provider-launch-bench bash packaging/build.sh build -DNODEPLANE_TESTS=ON >/dev/null
sock=$(bash packaging/container-test-engine.sh start)
trap 'bash packaging/container-test-engine.sh stop "$(dirname "$sock")"' EXIT
build/tests/bench/provider-launch-bench --engine-socket "$sock" "$@"
