#!/bin/bash
# README command one: set up, build, and run the whole system on one machine:
# nodeplaned on the default config (embedded SQLite ledger, loopback wire),
# one local nodeplane-node with the "process" provider, and a demo job
# launched through nodeplanectl and followed until its lease is done. Both
# processes are then left running to explore with nodeplanectl; Ctrl-C
# stops them (the node withdraws and drains first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup-deps.sh
bash packaging/build.sh build -DNODEPLANE_TESTS=OFF

config=config/nodeplane.toml
plugins=build/plugins/lib   # the plugins as built; an installed host finds its own
state=/var/lib/nodeplane node_state=/var/lib/nodeplane-node
ctl() { build/host/nodeplanectl --config "$config" "$@"; }
mkdir -p "$state" "$node_state"
chmod 700 "$node_state"  # the node's state: its own (nodeplane-node refuses one a job could read)
build/host/nodeplaned --check-config --config "$config" --plugin-dir "$plugins"

build/host/nodeplaned --config "$config" --plugin-dir "$plugins" 2>"$node_state/nodeplaned.log" &
host=$!
node=
cleanup() {
  [ -n "$node" ] && kill -TERM "$node" 2>/dev/null && wait "$node" || true
  kill -TERM "$host" 2>/dev/null && wait "$host" || true
}
trap cleanup EXIT
trap 'exit 0' INT TERM

# Bounded waits on what the processes report, never a fixed sleep.
wait_for() {  # wait_for DESCRIPTION COMMAND...
  local what=$1; shift
  for _ in $(seq 1 100); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$host" 2>/dev/null || { echo "nodeplaned exited:"; cat "$node_state/nodeplaned.log"; exit 1; }
    sleep 0.1
  done
  echo "timed out waiting for $what"; exit 1
}
wait_for "the control plane" curl -fsS http://127.0.0.1:7717/healthz
echo "nodeplaned is healthy: $(curl -fsS http://127.0.0.1:7717/healthz)"
wait_for "the dashboard" curl -fsS http://127.0.0.1:9717/healthz
echo "dashboard: http://127.0.0.1:9717/"

build/host/nodeplane-node run --server 127.0.0.1:7717 --name local-1 --state-dir "$node_state" \
  --vcpu 2 --memory 2GiB 2>"$node_state/node.log" &
node=$!
wait_for "the node to register" bash -c "build/host/nodeplanectl --config $config nodes list | grep -q 'local-1.*live'"
ctl nodes list

echo
echo "launching a demo job (tier \"demo\") and following its lease:"
out=$(ctl launch --tier demo --request-id "$(date +%s)" --wait --json)
echo "$out"
lease=$(sed -n 's/.*"lease":"\([0-9a-f]*\)".*/\1/p' <<<"$out")
echo
echo "the job's output ($node_state/jobs/$lease.log):"
cat "$node_state/jobs/$lease.log"

cat <<HELP

The dashboard (the fleet, the demo job's lease, GitHub jobs and why they wait):
  http://127.0.0.1:9717/

The control plane (pid $host) and the node local-1 (pid $node) keep running. Explore:
  build/host/nodeplanectl --config $config status
  build/host/nodeplanectl --config $config nodes list
  build/host/nodeplanectl --config $config leases show $lease
  build/host/nodeplanectl --config $config launch --tier demo --request-id \$(date +%s) --wait
  build/host/nodeplanectl --config $config metrics
Logs: $node_state/nodeplaned.log and $node_state/node.log. Ctrl-C stops both.
HELP
wait "$host"
