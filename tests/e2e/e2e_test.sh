#!/bin/bash
# End to end, with real processes on loopback: nodeplaned (SQLite ledger),
# nodeplane-node (process provider) and nodeplanectl, as an operator runs
# them. Every wait is bounded and waits for something a process reports
# (a log line, a lease phase, an exit), never for time to pass.
# usage: e2e_test.sh BIN_DIR SOURCE_DIR PLUGIN_DIR CASE
set -u
bin=$1 src=$2 plugins=$3 case=$4
fail() { echo "FAIL: $*"; for f in "$dir"/*.log; do echo "--- $f"; tail -n 30 "$f"; done; exit 1; }
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL $p 2>/dev/null; done; pkill -KILL -f "$dir/" 2>/dev/null; rm -rf "$dir"' EXIT

# Two free loopback ports for this run.
read -r port boot_port < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')

# write_config [tls]: the deployment's config, with short lease timings so
# expiry and heartbeats show within seconds.
write_config() {
  cat >"$dir/nodeplane.toml" <<TOML
deployment = "e2e"
state_dir = "$dir/host"
[wire]
listen = "127.0.0.1:$port"
poll_window = "2s"
inventory_interval = "1s"
[leases]
ttl = "3s"
reap_interval = "1s"
[tiers.job]
vcpu = 1
memory = "256MiB"
providers = ["process"]
command = ["/bin/sh", "-c", "echo running \$NODEPLANE_LEASE_ID; while [ ! -e $dir/finish-\$NODEPLANE_REQUEST_ID ]; do sleep 0.1; done; echo finished"]
[plugins.ledger]
library = "ledger-sqlite"
provides = ["ledger"]
[plugins.ledger.config]
barrier_grace_seconds = 1
quarantine_grace_seconds = 1
TOML
  if [ "${1:-}" = tls ]; then
    cat >>"$dir/nodeplane.toml" <<TOML
[wire.tls]
server_names = ["127.0.0.1"]
[bootstrap]
listen = "127.0.0.1:$boot_port"
TOML
  fi
}

start_host() {
  "$bin/nodeplaned" --config "$dir/nodeplane.toml" --plugin-dir "$plugins" 2>>"$dir/host.log" &
  host=$!
  pids+=($host)
  wait_until "the host to serve" grep -q "event=host.healthy" "$dir/host.log"
}

# start_node NAME [extra args]: a node on the wire with state in $dir/NAME.
start_node() {
  local name=$1; shift
  "$bin/nodeplane-node" run --server "127.0.0.1:$port" --name "$name" --state-dir "$dir/$name" \
    --deployment e2e --vcpu 2 --memory 1GiB "$@" 2>>"$dir/$name.log" &
  node=$!
  pids+=($node)
}

ctl() { "$bin/nodeplanectl" --config "$dir/nodeplane.toml" "$@"; }

# wait_until DESCRIPTION COMMAND...: polls a condition, at most 30 s.
wait_until() {
  local what=$1; shift
  for _ in $(seq 1 300); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "timed out waiting for $what"
}

phase_of() { ctl --json leases show "$1" | sed -n 's/.*"phase":"\([a-z]*\)".*/\1/p'; }
lease_is() { [ "$(phase_of "$1")" = "$2" ]; }
expiry_of() { ctl --json leases show "$1" | sed -n 's/.*"expires_at_ns":\([0-9]*\).*/\1/p'; }
node_is() { ctl --json nodes list | grep -q "\"name\":\"$1\"[^}]*\"state\":\"$2\""; }
finish_job() { touch "$dir/finish-$1"; }  # the demo command ends when its request's file appears

# launch REQUEST_ID: launches on the fleet; sets lease.
launch() {
  local out
  out=$(ctl --json launch --tier job --request-id "$1") || fail "launch $1 refused: $out"
  lease=$(sed -n 's/.*"lease":"\([0-9a-f]*\)".*/\1/p' <<<"$out")
  [ -n "$lease" ] || fail "no lease in: $out"
}

case $case in
enroll-and-job)
  # Enrollment with a join token and an operator's approval, then a job over
  # mTLS: launch, run, heartbeats past the TTL, release, done.
  write_config tls
  start_host
  fp=$(ctl --json ca show | sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p')
  token=$(ctl tokens create --uses 1 --ttl 10m 2>/dev/null)
  "$bin/nodeplane-node" enroll --bootstrap "127.0.0.1:$boot_port" --ca-fingerprint "$fp" --join-token "$token" \
    --name n1 --state-dir "$dir/n1" 2>>"$dir/n1.log" &
  enroll=$!
  pids+=($enroll)
  wait_until "a pending enrollment" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json enrollments list | grep -q n1"
  nfp=$(ctl --json enrollments list | sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p')
  ctl enrollments approve n1 --fingerprint "sha256:not-this-one" >/dev/null 2>&1 && fail "a wrong fingerprint was approved"
  ctl enrollments approve n1 --fingerprint "$nfp" >/dev/null || fail "approval refused"
  wait "$enroll" || fail "enroll exited $?"
  [ "$(stat -c %a "$dir/n1/node.key")" = 600 ] || fail "node.key mode $(stat -c %a "$dir/n1/node.key")"
  grep -q "token" "$dir/n1.log" && grep -q "$token" "$dir/n1.log" "$dir/host.log" && fail "the join token was logged"
  start_node n1 --tls
  wait_until "n1 to register" node_is n1 live
  launch 1
  wait_until "the job to run" lease_is "$lease" busy
  # Heartbeats at TTL/3 push the lease's expiry forward: it outlives its
  # first expiry by more than a whole TTL (3 s) and is still busy.
  first=$(expiry_of "$lease")
  wait_until "the lease to be renewed past a TTL" bash -c "[ \$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease | sed -n 's/.*\"expires_at_ns\":\([0-9]*\).*/\\1/p') -gt $((first + 3000000000)) ]"
  lease_is "$lease" busy || fail "the lease left busy while the job ran: $(phase_of "$lease")"
  finish_job 1
  wait_until "the lease to be done" lease_is "$lease" done
  grep -q "running $lease" "$dir/n1/jobs/$lease.log" || fail "the job did not run"
  ctl certs list --node n1 | grep -q enrolled || fail "the enrolled certificate is not recorded"
  ;;
plane-restart)
  # The control plane killed with SIGKILL while a job runs, then restarted:
  # the node registers again, the plane adopts the lease, the job completes.
  write_config
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  wait_until "the job to run" lease_is "$lease" busy
  kill -KILL $host; wait $host 2>/dev/null
  start_host
  wait_until "n1 to register again, with its job" grep -q "event=node.registered node=n1 version=1 instances=1" "$dir/n1.log"
  lease_is "$lease" busy || fail "the lease did not survive the restart: $(phase_of "$lease")"
  finish_job 1
  wait_until "the lease to be done" lease_is "$lease" done
  ;;
node-kill)
  # The node killed with SIGKILL mid-job: its lease expires into quarantine
  # (compute may still exist), and the node's next inventory frees it.
  write_config
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  wait_until "the job to run" lease_is "$lease" busy
  kill -KILL $node; wait $node 2>/dev/null
  wait_until "the lease to be quarantined" lease_is "$lease" quarantine
  start_node n1
  wait_until "the lease to be freed" bash -c "[ \"\$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease | sed -n 's/.*\"phase\":\"\([a-z]*\)\".*/\1/p')\" = failed ]"
  grep -q "event=node.leftover_stopped lease=$lease" "$dir/n1.log" || fail "the orphaned job was not stopped"
  ;;
node-sigterm)
  # SIGTERM on a node withdraws it: nothing new is placed there, and the job
  # it runs finishes and is released before the process exits 0.
  write_config
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  wait_until "the job to run" lease_is "$lease" busy
  kill -TERM $node
  wait_until "n1 to withdraw" node_is n1 withdrawn
  out=$(ctl launch --tier job --request-id 2 2>&1) && fail "a withdrawn node was given work: $out"
  kill -0 $node || fail "the node exited before its job finished"
  finish_job 1
  wait_until "the lease to be done" lease_is "$lease" done
  wait $node; rc=$?
  [ $rc -eq 0 ] || fail "the node exited $rc"
  ;;
drain)
  # A drain seals admission, requests a compute barrier, and completes once
  # the fleet has proved it runs nothing.
  write_config
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  wait_until "the job to run" lease_is "$lease" busy
  ctl drain --timeout 60s >"$dir/drain.out" 2>&1 &
  drain=$!
  wait_until "the drain to report the open lease" grep -q "1 lease(s) still open" "$dir/drain.out"
  kill -0 $drain || fail "the drain finished while a job ran: $(cat "$dir/drain.out")"
  finish_job 1
  wait $drain || fail "the drain failed: $(cat "$dir/drain.out")"
  grep -q '"clear"\|clear: true' "$dir/drain.out" || fail "no clear answer: $(cat "$dir/drain.out")"
  ctl launch --tier job --request-id 2 >/dev/null 2>&1 && fail "a drained deployment placed new work"
  ctl admission open >/dev/null || fail "admission open failed"
  ;;
postgres-job)
  # The same job flow with only the ledger section of the config changed.
  [ -n "${NODEPLANE_TEST_PG_DSN:-}" ] || { echo "NODEPLANE_TEST_PG_DSN is not set: skipped"; exit 77; }
  write_config
  sed -i '/^\[plugins\.ledger\]/,$d' "$dir/nodeplane.toml"
  cat >>"$dir/nodeplane.toml" <<TOML
[plugins.ledger]
library = "ledger-postgres"
provides = ["ledger"]
[plugins.ledger.config]
dsn = "$NODEPLANE_TEST_PG_DSN"
schema = "e2e_$$"
TOML
  start_host
  grep -q "event=plugin.opened instance=ledger interface=ledger plugin=ledger-postgres" "$dir/host.log" \
    || fail "the host did not open ledger-postgres"
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  wait_until "the job to run" lease_is "$lease" busy
  finish_job 1
  wait_until "the lease to be done" lease_is "$lease" done
  grep -q "NOTICE" "$dir/host.log" && fail "database notices reached the host's log"
  ;;
superseded)
  # A second process under the same name supersedes the first, which is
  # refused from then on and stops (exit 3).
  write_config
  start_host
  start_node n1
  first=$node
  wait_until "n1 to register" node_is n1 live
  "$bin/nodeplane-node" run --server "127.0.0.1:$port" --name n1 --state-dir "$dir/n1-second" \
    --deployment e2e --vcpu 2 --memory 1GiB 2>>"$dir/n1-second.log" &
  pids+=($!)
  wait $first; rc=$?
  [ $rc -eq 3 ] || fail "the superseded process exited $rc"
  grep -q "event=node.superseded" "$dir/n1.log" || fail "no node.superseded line"
  ;;
ctl-basics)
  # nodeplanectl's contract: exit codes that tell a refusal from an
  # unreachable host, the socket's mode, human and JSON output, metrics.
  write_config
  "$bin/nodeplanectl" --socket "$dir/nowhere.sock" status >/dev/null 2>&1; rc=$?
  [ $rc -eq 3 ] || fail "an unreachable host exited $rc, not 3"
  "$bin/nodeplanectl" --socket "$dir/nowhere.sock" frobnicate >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "an unknown command exited $rc, not 2"
  start_host
  [ "$(stat -c %a "$dir/host/admin.sock")" = 660 ] || fail "admin socket mode $(stat -c %a "$dir/host/admin.sock")"
  ctl leases release no-such-lease >/dev/null 2>&1; rc=$?
  [ $rc -eq 1 ] || fail "a refusal exited $rc, not 1"
  ctl launch --tier job --request-id 1 >/dev/null 2>&1; rc=$?
  [ $rc -eq 1 ] || fail "a launch with no node exited $rc, not 1"
  ctl status | grep -q '^deployment: e2e$' || fail "no human status"
  ctl --json status | grep -q '"deployment":"e2e"' || fail "no JSON status"
  start_node n1
  wait_until "n1 to register" node_is n1 live
  ctl nodes list | grep -q '^NAME ' || fail "no table header"
  token=$(ctl tokens create --uses 2 --ttl 5m 2>/dev/null)
  [ ${#token} -eq 32 ] || fail "a join token is 32 characters: $token"
  grep -q "$token" "$dir/host.log" && fail "the join token was logged"
  id=$(ctl --json tokens list | sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p')
  ctl tokens revoke "$id" >/dev/null || fail "token revoke failed"
  metrics=$(ctl metrics)
  for family in nodeplane_nodes nodeplane_commands_queued nodeplane_commands_in_flight nodeplane_polls_parked \
                nodeplane_leases nodeplane_enrollments_pending nodeplane_plugin_call_seconds_bucket; do
    grep -q "^$family" <<<"$metrics" || fail "metrics lack $family"
  done
  grep -q '^nodeplane_nodes{state="live"} 1$' <<<"$metrics" || fail "one live node expected: $(grep nodeplane_nodes <<<"$metrics")"
  grep -q '^nodeplane_polls_parked 1$' <<<"$metrics" || wait_until "the node's poll to park" bash -c \
    "$bin/nodeplanectl --config $dir/nodeplane.toml metrics | grep -q '^nodeplane_polls_parked 1$'"
  ;;
*)
  fail "unknown case $case"
  ;;
esac
echo "ok: $case"
