#!/bin/bash
# A job's queue time with runners kept waiting (min_idle) beside one launch
# per job (issue 47), as docs/performance.md runs it: builds
# warm-runner-bench, nodeplaned and nodeplane-node, installs the GitHub
# fake's npm modules, and runs 30 jobs one at a time in each round. Extra
# arguments go to warm-runner-bench (--jobs, --min-idle).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash packaging/setup-deps.sh >/dev/null
bash packaging/setup-test-doubles.sh >/dev/null
BUILD_TARGET=warm-runner-bench bash packaging/build.sh build -DNODEPLANE_TESTS=ON >/dev/null
exec build/tests/bench/warm-runner-bench "$@"
