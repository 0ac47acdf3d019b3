#!/bin/bash
# README command one: set up, build, and run the control plane on the default
# config (embedded SQLite ledger, loopback wire). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup-deps.sh
bash packaging/build.sh build -DNODEPLANE_TESTS=OFF

config=config/nodeplane.toml
plugins=build/plugins/lib   # the plugins as built; an installed host finds its own
build/host/nodeplaned --check-config --config "$config" --plugin-dir "$plugins"
build/host/nodeplaned --config "$config" --plugin-dir "$plugins" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM

# Wait (bounded) for the wire to answer, then show what it says.
for _ in $(seq 1 100); do
  if body=$(curl -fsS http://127.0.0.1:7717/healthz 2>/dev/null); then
    echo "nodeplaned is healthy: $body"
    echo "(running as pid $pid; Ctrl-C to stop)"
    break
  fi
  kill -0 $pid 2>/dev/null || { wait $pid; exit 1; }
  sleep 0.1
done
wait $pid
