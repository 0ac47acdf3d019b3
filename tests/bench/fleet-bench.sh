#!/bin/bash
# The fleet benchmark (issue 11) as docs/performance.md runs it: builds
# fleet-bench and nodeplaned, installs nginx from Debian for the throughput
# comparison only (it is no dependency of nodeplane), and runs 10,000 nodes.
# Extra arguments go to fleet-bench (--nodes, --launches, ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash packaging/setup-deps.sh >/dev/null
if ! command -v nginx >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { echo "fleet-bench.sh: nginx is missing; run as root to install it" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
  systemctl disable --now nginx >/dev/null 2>&1 || true  # the package's own service is not wanted
fi
BUILD_TARGET=fleet-bench bash packaging/build.sh build -DNODEPLANE_TESTS=ON >/dev/null
exec build/tests/bench/fleet-bench --nginx "$(command -v nginx)" "$@"
