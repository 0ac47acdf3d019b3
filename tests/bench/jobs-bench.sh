#!/bin/bash
# The job intake's burst benchmark (issue 18) as docs/performance.md runs it:
# builds jobs-bench and nodeplaned, installs the GitHub fake's npm modules,
# and queues 1,000 jobs against 100 simulated nodes. Extra arguments go to
# jobs-bench (--jobs, --nodes).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash packaging/setup-deps.sh >/dev/null
bash packaging/setup-test-doubles.sh >/dev/null
BUILD_TARGET=jobs-bench bash packaging/build.sh build -DNODEPLANE_TESTS=ON >/dev/null
exec build/tests/bench/jobs-bench "$@"
