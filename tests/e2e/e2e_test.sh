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
# Jobs run under uids of their own (nodeplane-node --job-uids): they reach
# the files a case gives them (finish-*, marks/) by name.
chmod 711 "$dir"
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL $p 2>/dev/null; done; pkill -KILL -f "$dir/" 2>/dev/null; [ -n "${E2E_KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"' EXIT

# Free loopback ports for this run: the wire, bootstrap, metrics, and a
# Prometheus server.
read -r port boot_port metrics_port prom_port < <(python3 -c 'import socket
s=[socket.socket() for _ in range(4)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')

# write_config [tls] [metrics]: the deployment's config, with short lease timings so
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
  if [ "${1:-}" = metrics ] || [ "${2:-}" = metrics ]; then
    cat >>"$dir/nodeplane.toml" <<TOML
[metrics]
listen = "127.0.0.1:$metrics_port"
sample_interval = "1s"
TOML
  fi
}

start_host() {
  local before
  before=$(grep -c "event=host.healthy" "$dir/host.log" 2>/dev/null)
  "$bin/nodeplaned" --config "$dir/nodeplane.toml" --plugin-dir "$plugins" 2>>"$dir/host.log" &
  host=$!
  pids+=($host)
  wait_until "the host to serve" bash -c "[ \$(grep -c event=host.healthy $dir/host.log) -gt ${before:-0} ]"
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

# browse ARGS: headless Chromium on the dashboard of the metrics listener.
browse() {
  chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$dir/chromium" \
    --virtual-time-budget=8000 "$@" "http://127.0.0.1:$metrics_port/dashboard" 2>>"$dir/chromium.log"
}

# use_engine: the container engine the test run started
# (packaging/container-test-engine.sh, via NODEPLANE_TEST_ENGINE_SOCKET), or
# the case is skipped; sets engine. Every container a node of this case
# made is removed when the case ends, and the case fails if one was left.
image=localhost/nodeplane-test-job:1
use_engine() {
  engine=${NODEPLANE_TEST_ENGINE_SOCKET:-}
  [ -S "$engine" ] || { echo "no container engine (NODEPLANE_TEST_ENGINE_SOCKET): skipped"; exit 77; }
}
engine_api() { curl -fsS --unix-socket "$engine" "http://d/v1.41$1" "${@:2}"; }
containers_left() { engine_api '/containers/json?all=1&filters=%7B%22label%22%3A%5B%22nodeplane.deployment%3De2e%22%5D%7D' | python3 -c 'import json,sys; print(" ".join(c["Names"][0] for c in json.load(sys.stdin)))'; }
no_containers_left() { [ -z "$(containers_left)" ]; }
start_container_node() { start_node "$1" --provider container --engine-socket "$engine" "${@:2}"; }

# postgres_ledger SCHEMA [LINE...]: the [plugins.ledger] table of a config on
# the PostgreSQL test server, in SCHEMA, with each LINE added to its config.
postgres_ledger() {
  printf '[plugins.ledger]\nlibrary = "ledger-postgres"\nprovides = ["ledger"]\n[plugins.ledger.config]\n'
  printf 'dsn = "%s"\nschema = "%s"\n' "$NODEPLANE_TEST_PG_DSN" "$1"
  shift
  [ $# -eq 0 ] || printf '%s\n' "$@"
}

# wait_until DESCRIPTION COMMAND...: polls a condition for at most 30 s (or
# $wait_s seconds when set, for a wait that outlasts a bounded retry),
# measured by the clock: a condition that itself takes time to answer does
# not stretch the bound.
wait_until() {
  local what=$1 deadline=$(( SECONDS + ${wait_s:-30} )); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $what"
    sleep 0.1
  done
}

phase_of() { ctl --json leases show "$1" | sed -n 's/.*"phase":"\([a-z]*\)".*/\1/p'; }
lease_is() { [ "$(phase_of "$1")" = "$2" ]; }
expiry_of() { ctl --json leases show "$1" | sed -n 's/.*"expires_at_ns":\([0-9]*\).*/\1/p'; }
node_is() { ctl --json nodes list | grep -q "\"name\":\"$1\"[^}]*\"state\":\"$2\""; }
finish_job() { touch "$dir/finish-$1"; }  # the demo command ends when its request's file appears

# launch_tier TIER REQUEST_ID: launches on the fleet; sets lease.
launch_tier() {
  local out
  out=$(ctl --json launch --tier "$1" --request-id "$2") || fail "launch $2 of $1 refused: $out"
  lease=$(sed -n 's/.*"lease":"\([0-9a-f]*\)".*/\1/p' <<<"$out")
  [ -n "$lease" ] || fail "no lease in: $out"
}
# launch REQUEST_ID: launch_tier job.
launch() { launch_tier job "$1"; }

# start_n1_with_job: node n1 registered and running job 1 (lease set).
start_n1_with_job() {
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  wait_until "the job to run" lease_is "$lease" busy
}

# enroll_node NAME: NAME enrolled over the bootstrap listener with a join
# token and an operator's approval (a wrong fingerprint refused first); its
# certificate and key in $dir/NAME; sets token.
enroll_node() {
  local fp nfp enroll
  fp=$(ctl --json ca show | sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p')
  token=$(ctl tokens create --uses 1 --ttl 10m 2>/dev/null)
  (umask 077 && printf '%s\n' "$token" >"$dir/$1.token")
  "$bin/nodeplane-node" enroll --bootstrap "127.0.0.1:$boot_port" --ca-fingerprint "$fp" --join-token-file "$dir/$1.token" \
    --name "$1" --state-dir "$dir/$1" 2>>"$dir/$1.log" &
  enroll=$!
  pids+=($enroll)
  # The token is never on a command line, where every user of the machine reads it.
  tr '\0' ' ' <"/proc/$enroll/cmdline" | grep -qF -- "$token" && fail "the join token is on the enroll's command line"
  wait_until "a pending enrollment" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json enrollments list | grep -q $1"
  nfp=$(ctl --json enrollments list | sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p')
  ctl enrollments approve "$1" --fingerprint "sha256:not-this-one" >/dev/null 2>&1 && fail "a wrong fingerprint was approved"
  ctl enrollments approve "$1" --fingerprint "$nfp" >/dev/null || fail "approval refused"
  wait "$enroll" || fail "enroll exited $?"
}

# start_github_fake [SPEC KEYS]: the stateful GitHub fake (with the Actions
# service) for App 11 installed on acme, its key in $dir/app.pem; sets gh_port.
start_github_fake() {
  [ -d "$src/tests/github/node_modules/jose" ] || { echo "GitHub test doubles missing (packaging/setup-test-doubles.sh): skipped"; exit 77; }
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/app.pem" 2>/dev/null
  chmod 600 "$dir/app.pem"
  openssl pkey -in "$dir/app.pem" -pubout -out "$dir/app.pub"
  cat >"$dir/fake.json" <<JSON
{"apps":[{"app_id":11,"client_id":"Iv1.aaa","public_key_file":"$dir/app.pub","installations":[{"id":101,"account":"acme"}]}]${1:-}}
JSON
  node "$src/tests/github/fake_github.mjs" "$dir/fake.json" >"$dir/fake.log" 2>&1 &
  pids+=($!)
  wait_until "the GitHub fake to serve" grep -q "^listening " "$dir/fake.log"
  gh_port=$(sed -n 's/^listening //p' "$dir/fake.log")
}

# write_acme_target [jobs]: target acme served by the fake through App 11
# (jit-github), with its job source too when asked.
write_acme_target() {
  local jobs=${1:-}
  cat >>"$dir/nodeplane.toml" <<TOML
[targets.acme]
jit = "github-acme"
${jobs:+jobs = \"github-acme\"}
[plugins.github-acme]
library = "jit-github"
provides = ["jit"${jobs:+, \"jobs\"}]
[plugins.github-acme.config]
api_url = "http://127.0.0.1:$gh_port/api/v3"
organization = "acme"
app_id = 11
private_key_file = "$dir/app.pem"
TOML
}

# scale_set_config SPEC_KEYS [two]: the GitHub fake, and the deployment with
# tier "large" taking scale set np-large's jobs (ceiling $ceiling, default 4)
# through target acme; with "two", tier "small" taking np-small's too.
# $session_retry (default 30s) is how long a held session is waited out;
# $ghost_check (default 5m) how often GitHub's runners are checked.
# Poll timing keeps GitHub's ratio, scaled down 60 times: the control plane
# gives a poll up after 2 s ($poll_timeout; 120 s in production) and the
# fake holds an idle one 1.47 s (github.com holds ~88 s), unless SPEC_KEYS
# say otherwise. $runner_env adds variables to the fake runner's command,
# $runner_wrap a command it runs under, $runner_cmd replaces it; the tiers'
# provider is $tier_provider (default process); $config_mode is
# write_config's.
scale_set_config() {
  local spec=$1
  [[ $spec == *poll_hold_ms* ]] || spec=',"poll_hold_ms":1467'$spec
  start_github_fake "$spec"
  write_config ${config_mode:-}
  local tiers=large runner=${runner_cmd:-\"python3\", \"$src/tests/github/fake_runner.py\"}
  [ "${2:-}" = two ] && tiers="large small"
  for t in $tiers; do
    cat >>"$dir/nodeplane.toml" <<TOML
[tiers.$t]
vcpu = 1
memory = "256MiB"
providers = ["${tier_provider:-process}"]
target = "acme"
runner_group = "builders"
scale_set = "np-$t"
labels = ["self-hosted", "$t"]
max_concurrent = ${ceiling:-4}
# A runner no job is left for waits idle, like a real one, then exits 3
# (its lease then fails, which the cases check never happens).
command = ["env", "FAKE_RUNNER_WAIT_S=30", "FAKE_RUNNER_MARK_DIR=$dir/marks"${runner_env:+, $runner_env}, ${runner_wrap:+$runner_wrap, }$runner]
${tier_extra:-}
TOML
  done
  mkdir -p -m 1777 "$dir/marks"
  write_acme_target jobs
  printf 'session_retry = "%s"\npoll_timeout = "%s"\nghost_check = "%s"\n' "${session_retry:-30s}" "${poll_timeout:-2s}" \
    "${ghost_check:-5m}" >"$dir/target-extra"
  sed -i "/^\[targets.acme\]/r $dir/target-extra" "$dir/nodeplane.toml"
}

# start_scale_set_fleet: nodeplaned and nodes n1..n$nodes (default 2, each
# with $node_vcpu vCPUs when set), with the scale set's session open; `fake`
# calls the GitHub fake.
fake() { curl -fsS "http://127.0.0.1:$gh_port$1" "${@:2}"; }
start_scale_set_fleet() {
  start_host
  local n
  for n in $(seq 1 "${nodes:-2}"); do start_node "n$n" ${node_vcpu:+--vcpu $node_vcpu}; done
  for n in $(seq 1 "${nodes:-2}"); do wait_until "n$n to register" node_is "n$n" live; done
  wait_until "the scale set's session" grep -q "event=jobs.session_opened tier=large" "$dir/host.log"
}

# queue_jobs COUNT [hold]: jobs assigned to scale set $scale_set (default
# np-large) at the fake; held ones run until `fake_release`.
queue_jobs() {
  fake /_fake/actions/queue -X POST -H 'content-type: application/json' \
    -d "{\"scale_set\":\"${scale_set:-np-large}\",\"count\":$1,\"hold\":$([ "${2:-}" = hold ] && echo true || echo false)}" >/dev/null \
    || fail "the fake refused the queue"
}
fake_release() { fake /_fake/actions/release -X POST >/dev/null || fail "the fake refused the release"; }

# expect_each_job_run_once COUNT: every job the fake queued finishes, each
# taken by exactly one runner (waits at most 3 minutes).
all_jobs_done() { fake /_fake/actions/jobs | python3 -c 'import json,sys
jobs=json.load(sys.stdin); sys.exit(0 if len(jobs)==int(sys.argv[1]) and all(j["state"]=="done" for j in jobs) else 1)' "$1"; }
expect_each_job_run_once() {
  wait_s=180 wait_until "every job to run" all_jobs_done "$1"
  fake /_fake/actions/jobs | python3 -c 'import json,sys
jobs=json.load(sys.stdin)
twice=[j["jobId"] for j in jobs if len(j["takenBy"])!=1]
sys.exit("jobs not run exactly once: %s" % twice if twice else 0)' || fail "a job ran twice"
}

# expect_fleet_settled COUNT: the journal has COUNT jobs, each completed
# succeeded and settled, each served by a lease of its own (on a node) that
# ended done; no runner's lease is left open and no runner is registered.
expect_fleet_settled() {
  wait_s=120 wait_until "every completion to be settled" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json jobs list --limit 1000 \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); sys.exit(0 if len(j)==$1 and all(e[\"settled\"] for e in j) else 1)'"
  wait_until "every runner's lease to end" bash -c "[ \"\$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases list | grep -c '\"tier\"')\" = 0 ]"
  ctl --json jobs list --limit 1000 >"$dir/journal.json"
  python3 - "$dir/journal.json" "$bin/nodeplanectl" "$dir/nodeplane.toml" <<'PY' || fail "the journal and the ledger disagree"
import json, subprocess, sys
jobs = json.load(open(sys.argv[1]))
bad = [j for j in jobs if j["result"] != "succeeded" or not j["lease"] or not j["node"] or not j["started_at_ns"]]
if bad: sys.exit("entries not completed on a node: %s" % bad[:3])
leases = [j["lease"] for j in jobs]
if len(set(leases)) != len(leases): sys.exit("a lease served two jobs")
for l in leases:
    shown = json.loads(subprocess.check_output([sys.argv[2], "--config", sys.argv[3], "--json", "leases", "show", l]))
    if shown["phase"] != "done": sys.exit("lease %s ended %s" % (l, shown["phase"]))
PY
  # A runner that ran its job deregistered. One still registered is only
  # allowed where a crash cut its launch short after GitHub minted its JIT
  # config: it never took a job, and its lease ended failed.
  fake /_fake/actions/state >"$dir/state.json"
  python3 - "$dir/state.json" "$bin/nodeplanectl" "$dir/nodeplane.toml" <<'PY' || fail "runners are still registered at GitHub"
import json, subprocess, sys
for a in json.load(open(sys.argv[1]))["agents"]:
    if a.get("job"): sys.exit("runner %s holds job %s" % (a["name"], a["job"]))
    lease = a["name"][len("np-"):]
    shown = json.loads(subprocess.check_output([sys.argv[2], "--config", sys.argv[3], "--json", "leases", "show", lease]))
    if shown["phase"] != "failed": sys.exit("runner %s never ran, and its lease is %s" % (a["name"], shown["phase"]))
    print("note: runner %s was registered by a launch a crash cut short (lease failed)" % a["name"])
PY
}

case $case in
enroll-and-job)
  # Enrollment with a join token and an operator's approval, then a job over
  # mTLS: launch, run, heartbeats past the TTL, release, done.
  write_config tls
  start_host
  enroll_node n1
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
  start_n1_with_job
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
  start_n1_with_job
  kill -KILL $node; wait $node 2>/dev/null
  wait_until "the lease to be quarantined" lease_is "$lease" quarantine
  start_node n1
  wait_until "the lease to be freed" bash -c "[ \"\$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease | sed -n 's/.*\"phase\":\"\([a-z]*\)\".*/\1/p')\" = failed ]"
  grep -q "event=node.leftover_stopped lease=$lease" "$dir/n1.log" || fail "the orphaned job was not stopped"
  ;;
plane-outage)
  # Issue 24 #2: the control plane is down longer than the lease TTL. A job
  # that finished meanwhile ends done, and one still running keeps its lease
  # busy: nothing is quarantined or failed for an outage the nodes did not
  # cause (the first reap waits for the nodes to come back and heartbeat).
  write_config
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  lease1=$lease
  launch 2
  lease2=$lease
  wait_until "job 1 to run" lease_is "$lease1" busy
  wait_until "job 2 to run" lease_is "$lease2" busy
  expires=$(expiry_of "$lease2")
  kill -KILL $host; wait $host 2>/dev/null
  finish_job 1
  wait_until "job 1 to exit during the outage" grep -q "event=node.job_exited lease=$lease1" "$dir/n1.log"
  wait_until "the outage to outlast the lease TTL" bash -c "[ \$(date +%s%N) -gt $((expires + 1000000000)) ]"
  start_host
  wait_until "lease 1 to be settled" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease1 | grep -q '\"phase\":\"\(done\|failed\)\"'"
  lease_is "$lease1" done || fail "a job that exited 0 during the outage ended $(phase_of "$lease1")"
  grep -q "event=node.released lease=$lease1 outcome=done" "$dir/n1.log" || fail "the node did not log its release"
  restarted=$(date +%s%N)
  wait_until "lease 2 to be renewed after the restart" bash -c \
    "[ \$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease2 | sed -n 's/.*\"expires_at_ns\":\([0-9]*\).*/\\1/p') -gt $((restarted + 2000000000)) ]"
  lease_is "$lease2" busy || fail "a running job's lease left busy after the outage: $(phase_of "$lease2")"
  grep -q "event=ledger.reaped" "$dir/host.log" && fail "the restarted host reaped leases whose holders were alive"
  finish_job 2
  wait_until "lease 2 to be done" lease_is "$lease2" done
  ;;
postgres-outage)
  # Issue 24 #2, #4: the same with the ledger (PostgreSQL) down longer than
  # the lease TTL while nodeplaned runs; and libpq's notices reach the log
  # in its format, never stderr raw.
  [ -n "${NODEPLANE_TEST_PG_DSN:-}" ] && [ -n "${NODEPLANE_TEST_PG_PAUSE:-}" ] || { echo "PostgreSQL test server not set: skipped"; exit 77; }
  write_config
  sed -i '/^\[plugins\.ledger\]/,$d' "$dir/nodeplane.toml"
  postgres_ledger "e2e_outage_$$" "quarantine_grace_seconds = 1" >>"$dir/nodeplane.toml"
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  launch 1
  lease1=$lease
  launch 2
  lease2=$lease
  wait_until "job 1 to run" lease_is "$lease1" busy
  wait_until "job 2 to run" lease_is "$lease2" busy
  expires=$(expiry_of "$lease2")
  $NODEPLANE_TEST_PG_PAUSE
  finish_job 1
  wait_until "job 1 to exit during the outage" grep -q "event=node.job_exited lease=$lease1" "$dir/n1.log"
  wait_until "the outage to outlast the lease TTL" bash -c "[ \$(date +%s%N) -gt $((expires + 1000000000)) ]"
  $NODEPLANE_TEST_PG_RESUME
  wait_until "lease 1 to be settled" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease1 | grep -q '\"phase\":\"\(done\|failed\)\"'"
  lease_is "$lease1" done || fail "a job that exited 0 during the outage ended $(phase_of "$lease1")"
  resumed=$(date +%s%N)
  wait_until "lease 2 to be renewed after the outage" bash -c \
    "[ \$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease2 | sed -n 's/.*\"expires_at_ns\":\([0-9]*\).*/\\1/p') -gt $((resumed + 2000000000)) ]"
  lease_is "$lease2" busy || fail "a running job's lease left busy after the outage: $(phase_of "$lease2")"
  grep -q "event=node.swept lease=$lease2" "$dir/n1.log" && fail "the running job was swept"
  finish_job 2
  wait_until "lease 2 to be done" lease_is "$lease2" done
  bad=$(grep -v '^ts=' "$dir/host.log")
  [ -z "$bad" ] || fail "the host wrote outside its log format: $bad"
  ;;
node-outage)
  # Issue 17 #12, issue 24 #2: the node is frozen (SIGSTOP) past the lease
  # TTL while its job runs, so the reaper quarantines the lease and sweeps.
  # The job of a quarantined lease is no orphan: the node's sweep keeps it,
  # and when it finishes the node settles the lease done at its new epoch.
  write_config
  start_host
  start_n1_with_job
  kill -STOP $node
  wait_until "the lease to be quarantined" lease_is "$lease" quarantine
  kill -CONT $node
  wait_until "the node's sweep after the reap" grep -q "event=node.sweep " "$dir/n1.log"
  grep -q "event=node.swept lease=$lease" "$dir/n1.log" && fail "the sweep stopped a quarantined lease's job"
  finish_job 1
  wait_until "the lease to be settled" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease | grep -q '\"phase\":\"done\"'"
  grep -q "event=node.released lease=$lease outcome=done" "$dir/n1.log" || fail "the node did not log its release"
  ;;
node-sigterm)
  # SIGTERM on a node withdraws it: nothing new is placed there, and the job
  # it runs finishes and is released before the process exits 0.
  write_config
  start_host
  start_n1_with_job
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
  start_n1_with_job
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
  postgres_ledger "e2e_$$" >>"$dir/nodeplane.toml"
  start_host
  grep -q "event=plugin.opened instance=ledger interface=ledger plugin=ledger-postgres" "$dir/host.log" \
    || fail "the host did not open ledger-postgres"
  start_n1_with_job
  finish_job 1
  wait_until "the lease to be done" lease_is "$lease" done
  grep -q "NOTICE" "$dir/host.log" && fail "database notices reached the host's log"
  ;;
crl)
  # The revocation-crl plugin with CRLs made by `openssl ca`: the revoked
  # certificate is refused from the first request after the CRL is replaced,
  # the other is served; a tampered CRL is not accepted; an expired one
  # follows on_expired.
  . "$src/tests/support/openssl_ca.sh"
  pki="$dir/pki"
  ca_init "$pki" e2e
  ca_issue "$pki" n1 e2e
  ca_issue "$pki" n2 e2e
  ca_crl "$pki" "$dir/crl.pem"
  mkdir -p "$dir/host"
  cp "$pki/ca.pem" "$dir/host/ca.pem"
  install -m 600 "$pki/ca.key" "$dir/host/ca.key"   # the deployment's CA is the operator's own
  write_config tls
  cat >>"$dir/nodeplane.toml" <<TOML
[plugins.crl]
library = "revocation-crl"
provides = ["revocation"]
[plugins.crl.config]
crl_files = ["$dir/crl.pem"]
ca_files = ["$pki/ca.pem"]
TOML
  start_host
  code() {  # code NODE: the status of a request authenticated as NODE
    curl -sS --max-time 10 --cacert "$dir/host/ca.pem" --cert "$pki/$1.pem" --key "$pki/$1.key" -o /dev/null \
      -w '%{http_code}' "https://127.0.0.1:$port/v1/nodes/$1/launched"
  }
  [ "$(code n1)" = 401 ] || fail "n1 before revocation: $(code n1)"   # 401: authenticated, not registered
  [ "$(code n2)" = 401 ] || fail "n2 before revocation: $(code n2)"
  cp "$dir/crl.pem" "$dir/crl-clean.pem"
  ca_revoke "$pki" n1
  ca_crl "$pki" "$dir/crl.pem"
  [ "$(code n1)" = 403 ] || fail "n1 was served after its revocation: $(code n1)"
  [ "$(code n2)" = 401 ] || fail "n2 after n1's revocation: $(code n2)"
  # A tampered CRL (the clean one, one signature byte changed) would un-revoke
  # n1 if it were believed; it is rejected and the previous CRL stays.
  openssl crl -in "$dir/crl-clean.pem" -outform DER -out "$dir/clean.der"
  python3 -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); b[-5]^=0xff; open(sys.argv[2],"wb").write(b)' \
    "$dir/clean.der" "$dir/tampered.der"
  mv "$dir/tampered.der" "$dir/crl.pem"
  [ "$(code n1)" = 403 ] || fail "a tampered CRL was believed: n1 got $(code n1)"
  grep -q "event=plugin.crl.rejected" "$dir/host.log" || fail "no crl.rejected line"
  # Expired (nextUpdate in the past): refused (503) under the default policy.
  ca_crl "$pki" "$dir/crl.pem" -crl_lastupdate 20200101000000Z -crl_nextupdate 20200102000000Z
  [ "$(code n2)" = 503 ] || fail "an expired CRL vouched for n2: $(code n2)"
  # ... and answered from, with a warning, under on_expired = "warn".
  kill -TERM $host; wait $host
  sed -i 's|^ca_files = .*|&\non_expired = "warn"|' "$dir/nodeplane.toml"
  start_host
  [ "$(code n2)" = 401 ] || fail "on_expired = warn refused n2: $(code n2)"
  [ "$(code n1)" = 403 ] || fail "on_expired = warn served the revoked n1: $(code n1)"
  grep -q "event=plugin.crl.expired" "$dir/host.log" || fail "no crl.expired warning"
  ;;
cache-rules)
  # The cache-policy-rules plugin behind the wire's cache-policy route:
  # first match wins, globs, case-insensitive names, reload on change, and
  # a bad file refused with its line (at start) or ignored (on reload).
  cat >"$dir/rules.toml" <<'TOML'
default = "allow"
[[rules]]
owner = "acme"
repository = "secret-ok"
action = "allow"
[[rules]]
owner = "acme"
repository = "secret-*"
action = "deny"
[[rules]]
owner = "evil?corp"
action = "deny"
TOML
  write_config
  cat >>"$dir/nodeplane.toml" <<TOML
[plugins.cache]
library = "cache-policy-rules"
provides = ["cache_policy"]
[plugins.cache.config]
rules_file = "$dir/rules.toml"
TOML
  start_host
  start_node n1  # the route answers registered nodes only (S03)
  wait_until "n1 to register" node_is n1 live
  allowed() { curl -fsS "http://127.0.0.1:$port/v1/nodes/n1/cache-policy?owner=$1&repository=$2"; }
  [ "$(allowed acme secret-ok)" = '{"allowed":true}' ] || fail "the first matching rule did not win"
  [ "$(allowed acme secret-keys)" = '{"allowed":false}' ] || fail "a glob rule did not deny"
  [ "$(allowed ACME Secret-Keys)" = '{"allowed":false}' ] || fail "names are case-insensitive"
  [ "$(allowed evil1corp x)" = '{"allowed":false}' ] || fail "? did not match one character"
  [ "$(allowed evil12corp x)" = '{"allowed":true}' ] || fail "? matched two characters"
  [ "$(allowed other%20org public)" = '{"allowed":true}' ] || fail "the default did not apply"
  # Reload: replace the file; the next request sees the new rules.
  printf 'default = "deny"\n' >"$dir/rules.new" && mv "$dir/rules.new" "$dir/rules.toml"
  [ "$(allowed other public)" = '{"allowed":false}' ] || fail "the rules were not reloaded"
  # A bad file is ignored with its line in the log; the rules in force stay.
  printf 'default = "deny"\n[[rules]]\nowner = "x"\naction = "maybe"\n' >"$dir/rules.new" && mv "$dir/rules.new" "$dir/rules.toml"
  [ "$(allowed other public)" = '{"allowed":false}' ] || fail "a bad file replaced the rules"
  grep -q 'event=plugin.cache_rules.rejected.*rules.toml:4:10: rules\[1\].action: must be' "$dir/host.log" \
    || fail "no rejection with the line: $(grep cache_rules "$dir/host.log")"
  # At start, a bad file stops the host and names the line.
  kill -TERM $host; wait $host
  if "$bin/nodeplaned" --config "$dir/nodeplane.toml" --plugin-dir "$plugins" 2>"$dir/bad-start.log"; then
    fail "the host started with a bad rules file"
  fi
  grep -q 'rules.toml:4:10: rules\[1\].action: must be' "$dir/bad-start.log" \
    || fail "the start-up error lacks the line: $(cat "$dir/bad-start.log")"
  ;;
github-job)
  # A tier with a target: the node mints its runner registration through the
  # wire, nodeplaned's jit-github instance asks the GitHub fake with the
  # target's App, and the job's process gets the config in its environment.
  # Neither log holds the config or a token.
  start_github_fake
  write_config
  cat >>"$dir/nodeplane.toml" <<TOML
[tiers.gh]
vcpu = 1
memory = "256MiB"
providers = ["process"]
target = "acme"
runner_group = "builders"
labels = ["self-hosted", "e2e"]
command = ["/bin/sh", "-c", "printf '%s' \"\$ACTIONS_RUNNER_INPUT_JITCONFIG\" | base64 -d; echo"]
TOML
  write_acme_target
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  out=$(ctl --json launch --tier gh --request-id 1 --wait) || fail "the launch failed: $out"
  lease=$(sed -n 's/.*"lease":"\([0-9a-f]*\)".*/\1/p' <<<"$out")
  wait_until "the job to finish" lease_is "$lease" done
  job_log="$dir/n1/jobs/$lease.log"
  grep -q '"app_id":11' "$job_log" || fail "the job did not get App 11's registration: $(cat "$job_log")"
  grep -q "\"runner\":\"np-$lease\"" "$job_log" || fail "the runner is not named after the lease"
  grep -q '"labels":\["self-hosted","e2e"\]' "$job_log" || fail "the tier's labels were not used"
  grep -q "event=wire.jit_minted.*lease=$lease" "$dir/host.log" || fail "the mint was not logged"
  config=$(head -n1 "$job_log" | tr -d '\n' | base64 -w0 | cut -c1-24)  # the encoded config's start
  for f in "$dir/host.log" "$dir/n1.log"; do
    grep -q "ghs_" "$f" && fail "a token reached $f"
    grep -qF "$config" "$f" && fail "the JIT config reached $f"
  done
  ;;
ca-rotation)
  # A CA rotation with nodeplanectl: during it both CAs are trusted and the
  # server keeps the previous CA's certificate (nodes that know only it keep
  # working); new certificates come from the new CA; after ca retire the old
  # CA's certificates are refused.
  write_config tls
  start_host
  registrations() { grep -c "event=node.registered" "$dir/$1.log" 2>/dev/null; }
  old_fp=$(ctl --json ca show | sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p')
  ctl ca issue n1 --out "$dir/n1" >/dev/null || fail "ca issue n1"
  start_node n1 --tls
  wait_until "n1 to register" node_is n1 live
  new_fp=$(ctl --json ca rotate | sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p')
  [ -n "$new_fp" ] && [ "$new_fp" != "$old_fp" ] || fail "ca rotate gave no new fingerprint"
  ctl ca rotate >/dev/null 2>&1 && fail "a second rotation was started during the first"
  kill -TERM $host; wait $host
  start_host
  ctl --json ca show | grep -q "\"fingerprint\":\"$new_fp\".*\"rotating\":true" || fail "the new CA is not current"
  # n1 holds the old CA's certificate and trusts only the old CA: it carries on.
  wait_until "n1 to register again after the restart" bash -c "[ \$(grep -c event=node.registered $dir/n1.log) -ge 2 ]"
  ctl ca issue n2 --out "$dir/n2" >/dev/null || fail "ca issue n2"
  grep -c "BEGIN CERTIFICATE" "$dir/n2/ca.crt" | grep -q '^2$' || fail "an issued bundle lacks the trust bundle"
  start_node n2 --tls
  wait_until "n2 (new CA) to register" node_is n2 live
  ctl ca retire >/dev/null || fail "ca retire"
  kill -TERM $host; wait $host
  start_host
  wait_until "n2 to register again after the retirement" bash -c "[ \$(grep -c event=node.registered $dir/n2.log) -ge 2 ]"
  if curl -sS --max-time 5 --cacert "$dir/host/ca.pem" --cert "$dir/n1/node.crt" --key "$dir/n1/node.key" \
       "https://127.0.0.1:$port/v1/nodes/n1/launched" >/dev/null 2>&1; then
    fail "a certificate of the retired CA was accepted"
  fi
  ;;
supersede-restart)
  # Issue 17: the control plane SIGKILLed while a superseded process drains
  # its job and its replacement runs another. After the restart neither
  # lease is released, quarantined or refused its heartbeats while either
  # process still runs its job; each ends done when its job does.
  write_config
  start_host
  start_node n1
  first=$node
  wait_until "n1 to register" node_is n1 live
  launch 1
  lease1=$lease
  wait_until "job 1 to run" lease_is "$lease1" busy
  "$bin/nodeplane-node" run --server "127.0.0.1:$port" --name n1 --state-dir "$dir/n1-b" \
    --deployment e2e --vcpu 2 --memory 1GiB 2>>"$dir/n1-b.log" &
  pids+=($!)
  wait_until "the first process to be superseded and drain" grep -q "event=node.draining" "$dir/n1.log"
  launch 2
  lease2=$lease
  wait_until "job 2 to run on the replacement" lease_is "$lease2" busy
  grep -q "running $lease2" "$dir/n1-b/jobs/$lease2.log" || fail "job 2 is not the replacement's"
  kill -KILL $host; wait $host 2>/dev/null
  start_host
  restarted=$(date +%s%N)
  wait_until "the replacement to register again" bash -c "[ \$(grep -c event=node.registered $dir/n1-b.log) -ge 2 ]"
  # Both leases are renewed past two TTLs after the restart: their holders'
  # heartbeats are accepted, and nothing expired, quarantined or freed them.
  for l in "$lease1" "$lease2"; do
    wait_until "lease $l to be renewed after the restart" bash -c \
      "[ \$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $l | sed -n 's/.*\"expires_at_ns\":\([0-9]*\).*/\\1/p') -gt $((restarted + 6000000000)) ]"
    lease_is "$l" busy || fail "lease $l left busy while its job ran: $(phase_of "$l")"
  done
  kill -0 $first || fail "the superseded process exited with its job running"
  finish_job 1
  wait_until "lease 1 to be done" lease_is "$lease1" done
  wait $first; rc=$?
  [ $rc -eq 3 ] || fail "the drained, superseded process exited $rc, not 3"
  lease_is "$lease2" busy || fail "lease 2 left busy: $(phase_of "$lease2")"
  finish_job 2
  wait_until "lease 2 to be done" lease_is "$lease2" done
  ;;
cert-revoke)
  # Issue 22 #1, #3: a certificate is revoked by any spelling of its serial
  # an operator pastes, a string that is not a serial is refused, an unknown
  # serial is refused unless --force; and the revocation reaches the plane
  # at once: the node's parked poll ends, nothing more is placed on it, and
  # its next registration is refused for good.
  write_config tls
  start_host
  ctl ca issue n1 --out "$dir/n1" >/dev/null || fail "ca issue n1"
  ctl ca issue n2 --out "$dir/n2" >/dev/null || fail "ca issue n2"
  start_node n2 --tls
  second=$node
  wait_until "n2 to register" node_is n2 live
  # A whole node revoked: out of the fleet the moment the command answers.
  ctl nodes revoke n2 >/dev/null || fail "nodes revoke n2"
  node_is n2 gone || fail "n2 is still placeable after its revocation: $(ctl --json nodes list)"
  wait $second; rc=$?
  [ $rc -eq 1 ] || fail "the revoked n2 exited $rc, not 1"
  start_node n1 --tls
  wait_until "n1 to register" node_is n1 live
  wait_until "n1's poll to park" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml metrics | grep -q '^nodeplane_polls_parked 1$'"
  printed=$(openssl x509 -noout -serial -in "$dir/n1/node.crt")  # serial=0A1B...
  colons=$(sed 's/^serial=//; s/../&:/g; s/:$//' <<<"$printed")   # 0A:1B:...
  out=$(ctl certs revoke not-a-serial 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q 'is not a certificate serial' <<<"$out" || fail "a non-serial answered $rc: $out"
  out=$(ctl certs revoke 00ABCDEF 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -q 'no certificate with serial abcdef was issued by this deployment' <<<"$out" \
    || fail "an unknown serial answered $rc: $out"
  ctl certs revoke 00abcdef --force >/dev/null || fail "--force did not record the revocation"
  ctl certs revoke "$colons" >/dev/null || fail "revoking $colons failed"
  node_is n1 gone || fail "n1 is still placeable after its certificate's revocation: $(ctl --json nodes list)"
  ctl --json certs list --node n1 | grep -q '"revoked":true' || fail "certs list does not show it revoked"
  out=$(ctl launch --tier job --request-id 1 2>&1) && fail "the revoked node was given work: $out"
  wait $node; rc=$?
  [ $rc -eq 1 ] || fail "the revoked node exited $rc, not 1 (refused for good)"
  grep -q 'event=node.refused.*has been revoked' "$dir/n1.log" || fail "the node was not told why"
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
launch-failure)
  # Issue 17 #13 (R43): a launch the node answers with a clean failure
  # releases its lease; it is not left open for the reaper.
  write_config
  start_host
  inc=0123456789abcdef0123456789abcdef
  node_call() {  # node_call PATH [BODY]: as the scripted node "s1"
    curl -sS -X POST -H "Nodeplane-Incarnation: $inc" --data "${2:-}" "http://127.0.0.1:$port$1"
  }
  node_call /v1/register '{"version":1,"node":"s1","provider":"process","deployment":"e2e","incarnation":"'$inc'","vcpu":2,"memory":1073741824}' >/dev/null
  wait_until "s1 to register" node_is s1 live
  ctl --json launch --tier job --request-id 5 >"$dir/launch.out" 2>&1 &
  launcher=$!
  cmd=$(node_call /v1/nodes/s1/poll)
  read -r id lease < <(python3 -c 'import json,sys; c=json.load(sys.stdin); print(c["id"], c["lease"]["id"])' <<<"$cmd")
  [ -n "$id" ] && [ -n "$lease" ] || fail "no launch in the poll: $cmd"
  node_call /v1/nodes/s1/result '{"id":"'$id'","ok":false,"error":"no room for it"}' >/dev/null
  wait $launcher && fail "the launch succeeded: $(cat "$dir/launch.out")"
  # Released by the time the launch answers: not left for the reaper's TTL.
  lease_is "$lease" failed || fail "the lease is $(phase_of "$lease") after a clean launch failure"
  ctl --json leases show "$lease" | grep -q 'no room for it' || fail "the failure is not recorded: $(ctl --json leases show "$lease")"
  ;;
launch-idempotent)
  # Issue 24 #3: a launch is idempotent per request id: a request an open
  # lease serves, or one that finished within a day, answers that lease, so
  # a client that retries (even two at once) never runs the job twice.
  write_config
  start_host
  start_node n1
  wait_until "n1 to register" node_is n1 live
  lease_of() { sed -n 's/.*"lease":"\([0-9a-f]*\)".*/\1/p' <<<"$1"; }
  first=$(ctl --json launch --tier job --request-id 9) || fail "the first launch failed: $first"
  again=$(ctl --json launch --tier job --request-id 9) || fail "the retry failed: $again"
  [ "$(lease_of "$again")" = "$(lease_of "$first")" ] || fail "a retry escrowed another lease: $first / $again"
  grep -q '"existing":true' <<<"$again" || fail "the retry does not say it found the lease: $again"
  [ "$(ctl --json leases list | grep -o '"request_id":9' | wc -l)" = 1 ] || fail "two leases serve request 9"
  finish_job 9
  wait_until "the job to be done" lease_is "$(lease_of "$first")" done
  later=$(ctl --json launch --tier job --request-id 9) || fail "the launch after the job failed: $later"
  [ "$(lease_of "$later")" = "$(lease_of "$first")" ] && grep -q '"outcome":"done"' <<<"$later" \
    || fail "a finished request was launched again: $later"
  ctl --json launch --tier job --request-id 10 >"$dir/a.out" 2>/dev/null &
  a=$!
  ctl --json launch --tier job --request-id 10 >"$dir/b.out" 2>/dev/null &
  b=$!
  wait $a || fail "one of two racing launches failed: $(cat "$dir/a.out")"
  wait $b || fail "one of two racing launches failed: $(cat "$dir/b.out")"
  [ "$(lease_of "$(cat "$dir/a.out")")" = "$(lease_of "$(cat "$dir/b.out")")" ] \
    || fail "two racing launches of one request got two leases: $(cat "$dir/a.out") / $(cat "$dir/b.out")"
  [ "$(ctl --json leases list | grep -o '"request_id":10' | wc -l)" = 1 ] || fail "two leases serve request 10"
  [ "$(grep -c "running " "$dir"/n1/jobs/*.log | awk -F: '{s+=$2} END {print s}')" = 2 ] || fail "a job ran twice"
  finish_job 10
  ;;
shutdown-bound)
  # Issue 17 #7: SIGTERM stops nodeplaned within 5 s even while a barrier
  # round waits on a node that registered and never polls, so nothing
  # answers it for a command timeout (10 minutes).
  write_config
  sed -i 's/^poll_window = .*/poll_window = "30s"/' "$dir/nodeplane.toml"  # the mute node is not expired meanwhile
  start_host
  code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'Nodeplane-Incarnation: 0123456789abcdef0123456789abcdef' \
    --data '{"version":1,"node":"mute","provider":"process","deployment":"e2e","incarnation":"0123456789abcdef0123456789abcdef","vcpu":1,"memory":1073741824}' \
    "http://127.0.0.1:$port/v1/register")
  [ "$code" = 200 ] || fail "the mute node's registration answered $code"
  ctl drain --timeout 60s >"$dir/drain.out" 2>&1 &
  wait_until "the barrier round to ask the mute node" bash -c \
    "$bin/nodeplanectl --config $dir/nodeplane.toml metrics | grep -q '^nodeplane_commands_queued 1$'"
  start=$(date +%s%N)
  kill -TERM $host
  for _ in $(seq 1 50); do kill -0 $host 2>/dev/null || break; sleep 0.1; done  # bounded: 5 s
  took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  kill -0 $host 2>/dev/null && fail "nodeplaned was still running $took_ms ms after SIGTERM; the bound is 5000 ms"
  wait $host; rc=$?
  [ $rc -eq 0 ] || fail "nodeplaned exited $rc on SIGTERM"
  echo "stopped in $took_ms ms"
  ;;
metrics-access)
  # Issue 50 (review D14): who may read the metrics listener, on the real
  # listener. On loopback, a request naming another site's Host (DNS
  # rebinding from an operator's browser) is refused. Beyond loopback,
  # nodeplaned asks for a client certificate of the configured CA or the
  # bearer token on every route but /healthz, refuses a token file others
  # can read, and answers only the Hosts it is given.
  write_config metrics
  start_host
  m="http://127.0.0.1:$metrics_port"
  code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
  [ "$(code "$m/api/overview")" = 200 ] || fail "loopback: the dashboard is not served to 127.0.0.1"
  [ "$(code -H 'Host: localhost:9717' "$m/api/overview")" = 200 ] || fail "loopback: localhost refused"
  [ "$(code -H 'Host: attacker.example' "$m/api/overview")" = 421 ] || fail "loopback: another site's Host was answered"
  [ "$(code -H 'Host: attacker.example' "$m/metrics")" = 421 ] || fail "loopback: another site's Host was scraped"
  # However many watch, the overview costs the ledger about one reading a
  # second: 50 dashboards asking at once cost what a few readings do.
  ledger_calls() { curl -fsS "$m/metrics" | sed -n 's/^nodeplane_plugin_call_seconds_count{instance="ledger",interface="ledger"} //p'; }
  sleep 1.1  # past the overview's age, so the next request reads the ledger (a measurement, not a synchronisation)
  before=$(ledger_calls); curl -fsS "$m/api/overview" >/dev/null; one=$(( $(ledger_calls) - before ))
  before=$(ledger_calls)
  viewers=()
  for i in $(seq 1 50); do curl -fsS "$m/api/overview" >/dev/null & viewers+=($!); done
  wait "${viewers[@]}"
  many=$(( $(ledger_calls) - before ))
  echo "ledger calls: one overview $one, fifty at once $many"
  [ "$many" -le $(( 10 * one )) ] || fail "50 overviews cost $many ledger calls, one costs $one"
  kill -TERM $host; wait $host
  # Beyond loopback: the deployment CA's certificates, or the token.
  write_config tls
  head -c 24 /dev/urandom | base64 >"$dir/metrics.token"
  chmod 644 "$dir/metrics.token"
  cat >>"$dir/nodeplane.toml" <<TOML
[metrics]
listen = "0.0.0.0:$metrics_port"
bearer_token_file = "$dir/metrics.token"
hosts = ["127.0.0.1", "dash.example"]
[metrics.tls]
client_ca = "deployment"
TOML
  "$bin/nodeplaned" --config "$dir/nodeplane.toml" --plugin-dir "$plugins" 2>"$dir/refused.log" && fail "a token file others can read was used"
  grep -q "metrics.bearer_token_file: $dir/metrics.token can be read by others than its owner" "$dir/refused.log" \
    || fail "the refusal does not name the file: $(tail -3 "$dir/refused.log")"
  chmod 600 "$dir/metrics.token"
  start_host
  ctl ca issue reader --out "$dir/reader" >/dev/null || fail "ca issue reader"
  m="https://127.0.0.1:$metrics_port"
  tls=(--cacert "$dir/host/ca.pem")
  [ "$(code "${tls[@]}" "$m/api/overview")" = 401 ] || fail "a client with neither certificate nor token read the dashboard"
  [ "$(code "${tls[@]}" "$m/metrics")" = 401 ] || fail "a client with neither certificate nor token scraped"
  [ "$(code "${tls[@]}" -H 'Authorization: Bearer wrong' "$m/metrics")" = 401 ] || fail "a wrong token was taken"
  [ "$(code "${tls[@]}" "$m/healthz")" = 200 ] || fail "/healthz asks who is asking"
  [ "$(code "${tls[@]}" -H "Authorization: Bearer $(cat "$dir/metrics.token")" "$m/metrics")" = 200 ] || fail "the token was refused"
  [ "$(code "${tls[@]}" --cert "$dir/reader/node.crt" --key "$dir/reader/node.key" "$m/api/overview")" = 200 ] \
    || fail "a certificate of the deployment CA was refused"
  [ "$(code "${tls[@]}" -H "Authorization: Bearer $(cat "$dir/metrics.token")" -H 'Host: other.example' "$m/metrics")" = 421 ] \
    || fail "a Host not in [metrics] hosts was answered"
  ;;
metrics-scrape)
  # Issue 19: the metrics listener serves the Prometheus text format that
  # promtool accepts, with the families an operator graphs; a real
  # Prometheus server scrapes it and its query API answers from it; the
  # alert rules pass promtool and the Grafana dashboard is JSON. Everything
  # but GET is refused: nothing on this listener changes state.
  command -v promtool >/dev/null && command -v prometheus >/dev/null || { echo "prometheus is not installed: skipped"; exit 77; }
  write_config metrics
  start_host
  start_n1_with_job
  finish_job 1
  wait_until "the lease to be done" lease_is "$lease" done
  m="http://127.0.0.1:$metrics_port"
  curl -fsS "$m/metrics" >"$dir/scrape.txt" || fail "no scrape"
  promtool check metrics <"$dir/scrape.txt" >"$dir/promtool.out" 2>&1 || fail "promtool refused the scrape: $(cat "$dir/promtool.out")"
  for family in process_resident_memory_bytes process_cpu_seconds_total process_open_fds process_start_time_seconds \
                nodeplane_leases_escrowed_total nodeplane_leases_released_total nodeplane_leases_reaped_total \
                nodeplane_leases_quarantined_total nodeplane_leases_force_released_total nodeplane_dispatch_seconds_bucket \
                nodeplane_wire_request_seconds_bucket nodeplane_nodes nodeplane_plugin_call_seconds_bucket; do
    grep -q "^$family" "$dir/scrape.txt" || fail "the scrape lacks $family"
  done
  grep -q '^nodeplane_leases_released_total{outcome="done"} 1$' "$dir/scrape.txt" || fail "the done release was not counted"
  grep -q '^nodeplane_wire_request_seconds_count{route="lease_release",status="204"} 1$' "$dir/scrape.txt" \
    || fail "the node's release is not in the wire's request counts: $(grep lease_release "$dir/scrape.txt")"
  for method in POST PUT DELETE; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' -X $method "$m/metrics")" = 405 ] || fail "$method was not refused"
  done
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$m/v1/register")" = 404 ] || fail "the metrics listener serves node routes"
  cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: nodeplane
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
rule_files: ["$src/packaging/prometheus/nodeplane-alerts.yml"]
YAML
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >"$dir/prometheus.log" 2>&1 &
  pids+=($!)
  q() { curl -fsS --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
  wait_until "Prometheus to scrape nodeplaned" bash -c \
    "curl -fsS --get http://127.0.0.1:$prom_port/api/v1/query --data-urlencode 'query=nodeplane_build_info' | grep -q '\"value\":\[[0-9.]*,\"1\"\]'"
  q 'nodeplane_nodes{state="live"}' | grep -q '"value":\[[0-9.]*,"1"\]' || fail "Prometheus does not see one live node: $(q 'nodeplane_nodes')"
  q 'nodeplane_leases_released_total{outcome="done"}' | grep -q '"value":\[[0-9.]*,"1"\]' || fail "Prometheus does not see the release"
  curl -fsS "http://127.0.0.1:$prom_port/api/v1/rules" | grep -q '"name":"NodeplaneLeasesStuckInQuarantine"' \
    || fail "Prometheus did not load the alert rules"
  promtool check rules "$src/packaging/prometheus/nodeplane-alerts.yml" >/dev/null || fail "promtool refused the alert rules"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["panels"] and d["uid"] == "nodeplane"' \
    "$src/packaging/grafana/nodeplane-dashboard.json" || fail "the Grafana dashboard is not valid"
  ;;
dashboard)
  # Issue 19: the dashboard as a person sees it: headless Chromium loads the
  # page from the metrics listener, its script fetches the JSON API, and the
  # DOM shows the nodes and the leases; the screenshot is kept in the build
  # tree (test-artifacts/dashboard.png).
  command -v chromium >/dev/null || { echo "chromium is not installed: skipped"; exit 77; }
  write_config metrics
  start_host
  start_node n1
  start_node n2
  wait_until "n1 and n2 to register" bash -c "[ \$($bin/nodeplanectl --config $dir/nodeplane.toml --json nodes list | grep -o '\"state\":\"live\"' | wc -l) = 2 ]"
  launch 1
  lease1=$lease
  launch 2
  lease2=$lease
  launch 3
  finish_job 3
  wait_until "job 1 to run" lease_is "$lease1" busy
  wait_until "job 2 to run" lease_is "$lease2" busy
  wait_until "job 3 to be done" lease_is "$lease" done
  wait_until "a few samples of the fleet" bash -c "[ \$(curl -fsS http://127.0.0.1:$metrics_port/api/history | grep -o at_ns | wc -l) -ge 3 ]"
  browse --dump-dom >"$dir/dom.html" || fail "chromium could not load the dashboard: $(tail -5 "$dir/chromium.log")"
  grep -q 'data-loaded="true"' "$dir/dom.html" || fail "the page's script did not load the API: $(head -c 2000 "$dir/dom.html")"
  for want in '<td class="mono">n1</td>' '<td class="mono">n2</td>' "${lease1:0:12}" "${lease2:0:12}" \
              '<td class="phase-busy">busy</td>' '<td class="result-done">done</td>' '2 of 2 nodes live'; do
    grep -qF "$want" "$dir/dom.html" || fail "the dashboard does not show $want"
  done
  grep -q '<polyline class="used"' "$dir/dom.html" || fail "the capacity plot was not drawn"
  artifacts="${NODEPLANE_TEST_ARTIFACTS:-$bin/../test-artifacts}"
  mkdir -p "$artifacts"
  browse --screenshot="$artifacts/dashboard.png" --window-size=1280,1100 >/dev/null || fail "no screenshot"
  [ -s "$artifacts/dashboard.png" ] || fail "the screenshot is empty"
  echo "screenshot: $artifacts/dashboard.png"
  ;;
dashboard-jobs)
  # Issue 49: the dashboard's GitHub jobs and scale-set views as a person
  # sees them, with a finished, a running and a waiting job (behind the
  # tier's ceiling of one): the reasons are in the DOM, the run is linked,
  # and job names holding <script> and <img onerror> are shown as text,
  # never run. The screenshot is docs/images/dashboard.png's source.
  command -v chromium >/dev/null || { echo "chromium is not installed: skipped"; exit 77; }
  ceiling=1 config_mode=metrics scale_set_config ''
  nodes=1 start_scale_set_fleet
  queue_named() {  # queue_named NAME [hold]
    fake /_fake/actions/queue -X POST -H 'content-type: application/json' -d "$(python3 -c 'import json,sys
print(json.dumps({"scale_set":"np-large","count":1,"hold":sys.argv[2]=="hold","display_name":sys.argv[1]}))' "$1" "${2:-}")" >/dev/null
  }
  state_count() {  # state_count STATE N: jobs list shows N jobs in STATE
    [ "$(ctl --json jobs list | python3 -c 'import json,sys; print(sum(j["state"]==sys.argv[1] for j in json.load(sys.stdin)))' "$1")" = "$2" ]
  }
  queue_named "<script>document.body.dataset.pwned='script'</script>"
  wait_until "the first job to finish" state_count finished 1
  queue_named "<img src=x onerror=\"document.body.dataset.pwned='img'\"> deploy" hold
  wait_until "the second job to run" state_count running 1
  queue_named "lint" hold
  wait_until "the third job to wait" state_count waiting 1
  wait_until "the dashboard to have samples" bash -c "curl -fsS http://127.0.0.1:$metrics_port/api/overview | grep -q '\"state\":\"waiting\"'"
  browse --dump-dom >"$dir/dom.html" || fail "chromium could not load the dashboard: $(tail -5 "$dir/chromium.log")"
  grep -q 'data-loaded="true"' "$dir/dom.html" || fail "the page's script did not load the API: $(head -c 2000 "$dir/dom.html")"
  grep -q 'data-pwned' "$dir/dom.html" && fail "a job's name ran as markup"
  for want in '<td class="state-waiting">waiting</td>' '<td class="state-running">running</td>' \
              '<td class="state-finished">finished</td>' \
              '<td class="reason-ceiling">waiting for capacity in tier large: 1 of 1 runners busy, ceiling reached (max_concurrent)</td>' \
              '<td class="reason-running">running on node n1 as runner np-' '<td class="reason-finished">finished: succeeded on node n1</td>' \
              "&lt;script&gt;document.body.dataset.pwned='script'&lt;/script&gt;</a>" \
              '&lt;img src=x onerror="document.body.dataset.pwned=' \
              '<a href="https://github.com/acme/widgets/actions/runs/' '<td class="session-open">open</td>' \
              '1 waiting · 1 running · 1 finished'; do
    grep -qF -- "$want" "$dir/dom.html" || fail "the dashboard does not show $want"
  done
  artifacts="${NODEPLANE_TEST_ARTIFACTS:-$bin/../test-artifacts}"
  mkdir -p "$artifacts"
  browse --screenshot="$artifacts/dashboard-jobs.png" --window-size=1280,1400 >/dev/null || fail "no screenshot"
  [ -s "$artifacts/dashboard-jobs.png" ] || fail "the screenshot is empty"
  echo "screenshot: $artifacts/dashboard-jobs.png"
  fake_release
  expect_each_job_run_once 3
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
scale-set-jobs)
  # Issue 18: jobs queued at GitHub for a scale set run on the fleet with
  # nobody typing anything. nodeplaned creates the scale set with the tier's
  # labels, holds its message session, keeps as many runners launched as
  # GitHub has jobs assigned (up to the tier's ceiling), each runner (the
  # fake runner, a real process started by a node with its scale-set JIT
  # config) takes one job, and each completion settles its runner's lease
  # done. Every job runs exactly once; at the end nothing is left open and
  # the session is closed at shutdown.
  scale_set_config ''
  start_scale_set_fleet
  queue_jobs 12
  expect_each_job_run_once 12
  fake /_fake/actions/state | python3 -c 'import json,sys
s=json.load(sys.stdin)["scale_sets"][0]
assert s["name"]=="np-large" and [l["name"] for l in s["labels"]]==["np-large","self-hosted","large"], s
assert s["max_capacity"]==4, s' || fail "the scale set is not the tier's: $(fake /_fake/actions/state)"
  expect_fleet_settled 12
  [ "$(grep -c 'event=jobs.completed tier=large .*result=succeeded' "$dir/host.log")" = 12 ] \
    || fail "expected 12 completions: $(grep -c event=jobs.completed "$dir/host.log")"
  grep -q "event=jobs.launch_failed" "$dir/host.log" && fail "a launch failed"
  grep -q "encodedJITConfig\|RemoteAuth" "$dir"/*.log && fail "a secret reached a log"
  metrics=$(ctl metrics)
  grep -q '^nodeplane_jobs_completed_total{result="succeeded"} 12$' <<<"$metrics" \
    || fail "the job metrics: $(grep nodeplane_jobs <<<"$metrics")"
  grep -q '^nodeplane_jobs_sessions_open 1$' <<<"$metrics" || fail "no session counted: $(grep nodeplane_jobs <<<"$metrics")"
  if command -v promtool >/dev/null; then
    promtool check metrics <<<"$metrics" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
  fi
  kill -TERM $host; wait $host
  grep -q "event=jobs.session_closed tier=large" "$dir/host.log" || fail "the session was not closed at shutdown"
  [ "$(fake /_fake/actions/state | python3 -c 'import json,sys; print(json.load(sys.stdin)["scale_sets"][0]["session"])')" = None ] \
    || fail "the fake still holds the session"
  ;;
scale-set-fleet)
  # Issue 18: 200 jobs for two tiers (two scale sets) across three nodes:
  # every job runs exactly once and completes, the journal knows each one's
  # lease and node, every lease ends done, no runner is left registered, and
  # no runner was launched that no job was left for.
  # GitHub batches entries (a completion with the next assignment): 50 ms here.
  ceiling=6 scale_set_config ',"batch_ms":50' two
  nodes=3 node_vcpu=4 start_scale_set_fleet
  wait_until "the small scale set's session" grep -q "event=jobs.session_opened tier=small" "$dir/host.log"
  started=$(date +%s.%N)
  queue_jobs 100
  scale_set=np-small queue_jobs 100
  expect_each_job_run_once 200
  echo "200 jobs in $(python3 -c "import time; print(round(time.time() - $started, 1))") s"
  expect_fleet_settled 200
  for t in large small; do
    [ "$(grep -c "event=jobs.settled tier=$t " "$dir/host.log")" = 100 ] || fail "tier $t did not settle 100 completions"
  done
  grep -q "event=jobs.launch_failed" "$dir/host.log" && fail "a launch failed"
  metrics=$(ctl metrics)
  grep -q '^nodeplane_leases_released_total{outcome="failed"} 0$' <<<"$metrics" \
    || fail "a runner's lease failed (an idle runner no job was left for?): $(grep released_total <<<"$metrics")"
  grep -q '^nodeplane_jobs_completed_total{result="succeeded"} 200$' <<<"$metrics" || fail "completions: $(grep completed_total <<<"$metrics")"
  grep -q '^nodeplane_jobs_queued_to_started_seconds_count 200$' <<<"$metrics" \
    || fail "queue times: $(grep queued_to_started_seconds_count <<<"$metrics")"
  grep -q '^nodeplane_jobs_plane_seconds_count [1-9]' <<<"$metrics" || fail "no control-plane share measured"
  grep -q '^nodeplane_github_rate_limit_remaining{target="acme"} [0-9]' <<<"$metrics" \
    || fail "no rate limit: $(grep rate_limit <<<"$metrics")"
  if command -v promtool >/dev/null; then
    promtool check metrics <<<"$metrics" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
  fi
  ctl jobs list --tier small --limit 3 | grep -q '^JOB_ID ' || fail "no human jobs list: $(ctl jobs list --limit 3)"
  ;;
scale-set-chaos)
  # Issue 18: the same 200 jobs with nodeplaned SIGKILLed five times while
  # they run, at moments spread over the run. Each new process waits out its
  # predecessor's session, reads the runners from the ledger and the
  # running jobs from the journal, and settles the completions it owes: no
  # job is lost or run twice, every lease ends done.
  ceiling=6 session_retry=1s scale_set_config ',"session_idle_seconds":2' two
  nodes=3 node_vcpu=4 start_scale_set_fleet
  wait_until "the small scale set's session" grep -q "event=jobs.session_opened tier=small" "$dir/host.log"
  queue_jobs 100
  scale_set=np-small queue_jobs 100
  done_jobs() { fake /_fake/actions/jobs | python3 -c 'import json,sys; print(sum(j["state"]=="done" for j in json.load(sys.stdin)))'; }
  for k in 1 2 3 4 5; do
    wait_s=120 wait_until "$((k * 30)) jobs to be done" bash -c "[ \$(curl -fsS http://127.0.0.1:$gh_port/_fake/actions/jobs \
      | python3 -c 'import json,sys; print(sum(j[\"state\"]==\"done\" for j in json.load(sys.stdin)))') -ge $((k * 30)) ]"
    echo "SIGKILL $k after $(done_jobs) jobs"
    kill -KILL $host; wait $host 2>/dev/null
    start_host
    wait_s=60 wait_until "session $((k + 1)) of each tier" bash -c \
      "[ \$(grep -c 'event=jobs.session_opened tier=large' $dir/host.log) -ge $((k + 1)) ] && [ \$(grep -c 'event=jobs.session_opened tier=small' $dir/host.log) -ge $((k + 1)) ]"
  done
  expect_each_job_run_once 200
  expect_fleet_settled 200
  ;;
scale-set-storm)
  # Issue 18: GitHub answering 5xx, then 429 with Retry-After, for a while,
  # with jobs queued: the listener backs off (the wait it logs grows, and
  # honours Retry-After), never crashes, and every job runs once afterwards.
  scale_set_config ''
  start_scale_set_fleet
  queue_jobs 10
  fake /_fake/actions/faults -X POST -H 'content-type: application/json' -d '{"status":503,"count":4}' >/dev/null
  queue_jobs 20
  wait_s=60 wait_until "the 5xx storm to pass" bash -c "curl -fsS http://127.0.0.1:$gh_port/_fake/actions/faults | grep -q '\"left\":0'"
  fake /_fake/actions/faults -X POST -H 'content-type: application/json' -d '{"status":429,"count":3,"retry_after":2}' >/dev/null
  queue_jobs 20
  wait_s=60 wait_until "the 429 storm to pass" bash -c "curl -fsS http://127.0.0.1:$gh_port/_fake/actions/faults | grep -q '\"left\":0'"
  expect_each_job_run_once 50
  expect_fleet_settled 50
  kill -0 $host 2>/dev/null || fail "nodeplaned died in the storm"
  grep -q "event=jobs.poll_failed tier=large\|event=jobs.acknowledge_failed tier=large" "$dir/host.log" || fail "no failure was seen"
  grep -q "retry after 2 s" "$dir/host.log" || fail "Retry-After was not read: $(grep -m3 'failed' "$dir/host.log")"
  ;;
scale-set-settle-restart)
  # Issue 18 (S17, S20): a completion journalled and acknowledged but not
  # yet settled when nodeplaned dies is settled by its successor from the
  # journal, with the node and lease on record: the node is stopped
  # (SIGSTOP) so the settling destroy cannot finish, nodeplaned is SIGKILLed,
  # the node resumes, and the new process settles the restored completion
  # (DestroyCompletedBound while the lease is open, the verdict alone once
  # the node has released it).
  session_retry=1s scale_set_config ',"session_idle_seconds":2'
  nodes=1 start_scale_set_fleet
  queue_jobs 1 hold
  wait_until "the runner to take the job" grep -q "event=jobs.started tier=large" "$dir/host.log"
  kill -STOP $node
  fake_release
  wait_until "the completion to be acknowledged" bash -c "grep -q 'event=jobs.completed tier=large' $dir/host.log && \
    [ \$(curl -fsS http://127.0.0.1:$gh_port/_fake/actions/state | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"scale_sets\"][0][\"pending_messages\"])') = 0 ]"
  grep -q "event=jobs.settled" "$dir/host.log" && fail "the completion settled with the node stopped"
  kill -KILL $host; wait $host 2>/dev/null
  kill -CONT $node
  start_host
  wait_until "the restored completion to be settled" grep -q "event=jobs.settled tier=large .*restored=true" "$dir/host.log"
  grep "event=jobs.settled" "$dir/host.log"
  grep -Eq "event=jobs.settled tier=large .*restored=true how=(destroyed_bound|verdict)" "$dir/host.log" \
    || fail "the restored completion was not settled with its recorded node and lease"
  expect_each_job_run_once 1
  expect_fleet_settled 1
  ;;
scale-set-restart)
  # Issue 18: nodeplaned SIGKILLed while scale-set runners run (held) jobs, then
  # restarted. Its old session blocks the new one (409) until GitHub
  # expires it: the listener waits, never fails. Messages it had not
  # acknowledged come back; the runner count is read from the ledger, so
  # nothing is launched twice and no job is lost or run twice. (A 409 is
  # waited out 3 s at a time here, not the default 30 s.)
  session_retry=3s scale_set_config ',"session_idle_seconds":2'
  start_scale_set_fleet
  queue_jobs 12 hold
  wait_until "runners to run jobs" bash -c "[ \$(grep -c 'event=jobs.started tier=large' $dir/host.log) -ge 2 ]"
  kill -KILL $host; wait $host 2>/dev/null
  start_host
  # The jobs run on through the restart; they end once the new process
  # holds the session again, so their completions reach it.
  wait_s=90 wait_until "the session to be reopened" bash -c \
    "[ \$(grep -c 'event=jobs.session_opened tier=large' $dir/host.log) -ge 2 ]"
  fake_release
  expect_each_job_run_once 12
  grep -q "event=jobs.session_held tier=large" "$dir/host.log" || echo "note: the old session had expired before the restart asked"
  expect_fleet_settled 12
  ;;
scale-set-requeue)
  # Issue 47 (review D1): GitHub re-queues a job no runner took within its
  # pickup window: JobCompleted "canceled" naming no runner, then JobAssigned
  # again for the same jobId. Here the runner is slow to come up: it asks
  # for a job only once the fake has re-queued it (a 2 s window scaled from
  # GitHub's), so the job is re-queued once, then taken, and runs to its
  # end: it ends succeeded and its runner is never signalled.
  runner_env='"FAKE_RUNNER_TAKE_AFTER=requeued"' scale_set_config ',"pickup_window_ms":2000'
  nodes=1 start_scale_set_fleet
  queue_jobs 1
  expect_each_job_run_once 1
  fake /_fake/actions/jobs | python3 -c 'import json,sys
j=json.load(sys.stdin)[0]
sys.exit(0 if j["result"]=="succeeded" and j["requeues"]>=1 else "not re-queued then succeeded: %s" % j)' \
    || fail "the job was not re-queued, or did not succeed"
  grep -q "event=jobs.completed tier=large .*result=canceled" "$dir/host.log" || fail "the cancellation never arrived"
  expect_fleet_settled 1
  [ -z "$(ls "$dir/marks")" ] || fail "a runner was signalled: $(ls "$dir/marks")"
  ctl --json jobs list | python3 -c 'import json,sys
j=json.load(sys.stdin)[0]
sys.exit(0 if j["requeues"]>=1 and j["result"]=="succeeded" else "journal: %s" % j)' || fail "the journal lost the re-queue"
  ;;
scale-set-session-expiry)
  # Issue 47 (wire comparison D2): GitHub drops the session and answers its
  # queue 400 RunnerScaleSetSessionExpiredException: the listener opens a
  # new session, says why, and the jobs queued meanwhile run. It is no
  # poll failure.
  scale_set_config ''
  nodes=1 start_scale_set_fleet
  fake /_fake/actions/expire_sessions -X POST >/dev/null
  wait_until "a new session" bash -c "[ \$(grep -c 'event=jobs.session_opened tier=large' $dir/host.log) -ge 2 ]"
  grep -q "event=jobs.session_lost tier=large .*RunnerScaleSetSessionExpiredException" "$dir/host.log" \
    || fail "the lost session was not said: $(grep session "$dir/host.log" | tail -3)"
  queue_jobs 3
  expect_each_job_run_once 3
  expect_fleet_settled 3
  grep -q "event=jobs.poll_failed" "$dir/host.log" && fail "a dropped session was reported as a poll failure"
  ;;
scale-set-deleted)
  # Issue 47 (review D10): GitHub deletes a scale set (offline for a day, or
  # an admin): its session dies, and opening another answers 404
  # RunnerScaleSetNotFoundException. The listener creates the scale set again
  # and takes its jobs.
  scale_set_config ''
  nodes=1 start_scale_set_fleet
  fake /_fake/actions/delete_scale_set -X POST -H 'content-type: application/json' -d '{"scale_set":"np-large"}' >/dev/null
  wait_until "the scale set created again" bash -c "[ \$(grep -c 'event=jobs.scale_set_ready tier=large' $dir/host.log) -ge 2 ]"
  grep -q "event=jobs.scale_set_gone tier=large .*RunnerScaleSetNotFoundException" "$dir/host.log" \
    || fail "the deleted scale set was not said: $(grep scale_set "$dir/host.log" | tail -3)"
  wait_until "a session on the new scale set" bash -c "[ \$(grep -c 'event=jobs.session_opened tier=large' $dir/host.log) -ge 2 ]"
  queue_jobs 3
  expect_each_job_run_once 3
  expect_fleet_settled 3
  ;;
scale-set-ghes-labels)
  # Issue 47 (wire comparison D3): a GHES without custom scale-set labels
  # (3.9-3.20 without DistributedTask.AllowRunnerScaleSetCustomLabels) keeps
  # only the scale set's name: the name is always the first label, so
  # runs-on: np-large matches, and the labels GitHub dropped are named.
  scale_set_config ',"custom_labels":false'
  nodes=1 start_scale_set_fleet
  [ "$(fake /_fake/actions/state | python3 -c 'import json,sys; print([l["name"] for l in json.load(sys.stdin)["scale_sets"][0]["labels"]])')" = "['np-large']" ] \
    || fail "the fake kept custom labels: $(fake /_fake/actions/state)"
  grep -q "event=jobs.labels_dropped tier=large .*kept=np-large dropped=self-hosted,large" "$dir/host.log" \
    || fail "the dropped labels were not said: $(grep labels "$dir/host.log")"
  queue_jobs 2
  expect_each_job_run_once 2
  expect_fleet_settled 2
  ;;
scale-set-queue-query)
  # Issue 47 (wire comparison D4): GHES's message queue URL carries
  # ?sessionId=, and the queue refuses a poll or an acknowledgement without
  # it. Every one keeps it.
  scale_set_config ''
  nodes=1 start_scale_set_fleet
  queue_jobs 2
  expect_each_job_run_once 2
  expect_fleet_settled 2
  fake /_fake/log | python3 -c 'import json,sys
q=[e for e in json.load(sys.stdin) if e["path"].startswith("/actions-queue/")]
bad=[e for e in q if "sessionId=" not in e["path"]]
acks=[e for e in q if e["method"]=="DELETE"]
sys.exit("queue calls without the query: %s" % bad[:3] if bad else 0 if acks else "no acknowledgement was seen")' \
    || fail "the queue URL lost its query"
  ;;
scale-set-idle-poll)
  # Issue 47 (wire comparison D1): GitHub holds an idle poll past the
  # control plane's old 50 s deadline (~88 s on github.com). Scaled 25
  # times: the fake holds 3.5 s, the old deadline was 2 s, the bound is now
  # 5 s (120 s). Then the fake holds 6 s, past even the bound: a poll given
  # up at the bound is no message too. Idle all along, no poll failure is
  # logged, and a job queued afterwards runs.
  poll_timeout=5s scale_set_config ',"poll_hold_ms":3520'
  nodes=1 start_scale_set_fleet
  polls() { fake /_fake/log | python3 -c 'import json,sys; print(sum(e["method"]=="GET" and e["path"].startswith("/actions-queue/") for e in json.load(sys.stdin)))'; }
  wait_s=60 wait_until "three polls held to their end" bash -c "[ \$(curl -fsS http://127.0.0.1:$gh_port/_fake/log | python3 -c 'import json,sys; print(sum(e[\"method\"]==\"GET\" and e[\"path\"].startswith(\"/actions-queue/\") for e in json.load(sys.stdin)))') -ge 4 ]"
  fake /_fake/actions/behaviour -X POST -H 'content-type: application/json' -d '{"poll_hold_ms":6000}' >/dev/null
  seen=$(polls)
  wait_s=60 wait_until "three polls given up at the bound" bash -c "[ \$(curl -fsS http://127.0.0.1:$gh_port/_fake/log | python3 -c 'import json,sys; print(sum(e[\"method\"]==\"GET\" and e[\"path\"].startswith(\"/actions-queue/\") for e in json.load(sys.stdin)))') -ge $((seen + 3)) ]"
  grep -q "event=jobs.poll_failed" "$dir/host.log" && fail "an idle poll was reported as a failure: $(grep -m2 poll_failed "$dir/host.log")"
  grep -q "event=jobs.session_opened tier=large" "$dir/host.log" && [ "$(grep -c 'event=jobs.session_opened' "$dir/host.log")" = 1 ] \
    || fail "the session was opened again"
  queue_jobs 1
  expect_each_job_run_once 1
  expect_fleet_settled 1
  ;;
scale-set-remote-auth)
  # Issue 47 (wire comparison D5): GitHub does not always accept a
  # registration token at once; the RemoteAuth exchange answers 401, then
  # 403. The plugin retries as GitHub's clients do (1 s, 2 s) and the scale
  # set is created with no failure logged.
  scale_set_config ''
  fake /_fake/actions/remote_auth_faults -X POST -H 'content-type: application/json' -d '{"status":401,"count":1}' >/dev/null
  nodes=1 start_scale_set_fleet
  grep -q "event=plugin.github.retry .*runner-registration" "$dir/host.log" || fail "the 401 was not retried: $(grep -m3 github "$dir/host.log")"
  grep -q "event=jobs.scale_set_unavailable" "$dir/host.log" && fail "a transient 401 failed the scale set"
  queue_jobs 1
  expect_each_job_run_once 1
  expect_fleet_settled 1
  ;;
scale-set-retire)
  # Issue 47 (review D4): idle runners are retired down to min_idle, and a
  # node's drain and a deployment drain end while runners are idle. Tier
  # large keeps one idle runner (min_idle = 1) and retires a surplus one idle
  # for 1 s. Three jobs are queued and cancelled before any runner took them
  # (the runners are slow to ask): their three runners are retired at GitHub
  # and stopped by their node, leaving one. The node holding it is stopped
  # (SIGTERM): it withdraws, its idle runner is retired, and it exits; the
  # runner kept idle is launched again on the other node. Then the
  # deployment is drained, which retires that one too.
  runner_env='"FAKE_RUNNER_TAKE_AFTER=canceled"' tier_extra=$'min_idle = 1\nidle_timeout = "1s"' scale_set_config ''
  nodes=2 start_scale_set_fleet
  runners() { fake /_fake/actions/state | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["agents"]))'; }
  wait_until "one runner kept idle" bash -c "[ \$(curl -fsS http://127.0.0.1:$gh_port/_fake/actions/state | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"agents\"]))') = 1 ]"
  queue_jobs 3
  wait_until "four runners" bash -c "[ \$(grep -c event=jobs.runner_launched $dir/host.log) -ge 4 ]"
  fake /_fake/actions/cancel -X POST -H 'content-type: application/json' -d '{"scale_set":"np-large"}' >/dev/null
  wait_until "three retired" bash -c "[ \$(grep -c 'event=jobs.runner_retired tier=large' $dir/host.log) -ge 3 ]"
  wait_until "their leases to end" bash -c "[ \$($bin/nodeplanectl --config $dir/nodeplane.toml --json leases list | grep -o '\"tier\":\"large\"' | wc -l) = 1 ]"
  [ "$(runners)" = 1 ] || fail "GitHub still lists $(runners) runners"
  ctl metrics | grep -q '^nodeplane_leases_released_total{outcome="failed"} 0$' || fail "a retired runner's lease failed: $(ctl metrics | grep released_total)"
  idle_node=$(ctl --json leases list | sed -n 's/.*"node":"\(n[12]\)".*/\1/p' | head -1)
  idle_pid=$(pgrep -f -- "--name $idle_node --state-dir $dir/$idle_node")
  kill -TERM "$idle_pid"
  wait_until "$idle_node to finish its drain" bash -c "! kill -0 $idle_pid 2>/dev/null"
  grep -q "event=jobs.runner_retired tier=large .*why=\"its node is leaving\"" "$dir/host.log" || fail "the leaving node's runner was not retired"
  wait_until "the idle runner kept on the other node" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json leases list | grep -q '\"phase\":\"busy\"'"
  wait_s=60 wait_until "the deployment's drain to end" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml drain --timeout 50s >/dev/null"
  grep -q "event=jobs.runner_retired tier=large .*why=\"the deployment is draining\"" "$dir/host.log" || fail "the drain did not retire the idle runner"
  ;;
scale-set-job-result)
  # Issue 47 (review D19): an ephemeral runner exits 0 whatever its job's
  # result, so a lease its runner released first ends done; the job's result
  # is GitHub's. Two jobs fail at GitHub: the journal and the lease's record
  # (nodeplanectl leases show; the dashboard's recent jobs read the same)
  # say failed, beside the lease's own verdict.
  runner_env='"FAKE_RUNNER_RESULT=failed"' scale_set_config ''
  nodes=1 start_scale_set_fleet
  queue_jobs 2
  wait_s=60 wait_until "both jobs to be settled" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json jobs list \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); sys.exit(0 if len(j)==2 and all(e[\"settled\"] for e in j) else 1)'"
  ctl --json jobs list >"$dir/journal.json"
  python3 - "$dir/journal.json" "$bin/nodeplanectl" "$dir/nodeplane.toml" <<'PY' || fail "GitHub's result was not recorded"
import json, subprocess, sys
for j in json.load(open(sys.argv[1])):
    if j["result"] != "failed": sys.exit("journal: %s" % j)
    shown = json.loads(subprocess.check_output([sys.argv[2], "--config", sys.argv[3], "--json", "leases", "show", j["lease"]]))
    # The lease's own verdict is its node's: done when the runner exited
    # first (0, whatever its job did), GitHub's when the settling destroy came
    # first. The job's result is GitHub's either way.
    if shown["phase"] not in ("done", "failed") or shown["forge_result"] != "failed": sys.exit("lease: %s" % shown)
PY
  ;;
scale-set-ghosts)
  # Issue 49: the ghost check. GitHub keeps a registration no lease owns (a
  # runner minted, then never started: the fake's ghost); nodeplaned finds it
  # in GitHub's runner list and removes it by its id, counts it and says so,
  # while a registration not named as ours and the runners of live jobs are
  # left alone.
  ghost_check=1s scale_set_config ''
  nodes=1 start_scale_set_fleet
  ghost=np-00000000000000000000000000000bad
  for name in $ghost someone-elses-runner; do
    fake /_fake/actions/ghost -X POST -H 'content-type: application/json' \
      -d "{\"scale_set\":\"np-large\",\"name\":\"$name\"}" >/dev/null || fail "the fake refused the ghost $name"
  done
  queue_jobs 2 hold
  running() { [ "$(ctl --json jobs list | grep -o '"state":"running"' | wc -l)" = 2 ]; }
  wait_until "both jobs to run" running
  agents() { fake /_fake/actions/state | python3 -c 'import json,sys; print(" ".join(sorted(a["name"] for a in json.load(sys.stdin)["agents"])))'; }
  ghost_gone() { local a; a=$(agents) || return 1; ! tr ' ' '\n' <<<"$a" | grep -qx "$ghost"; }
  wait_until "the ghost to be removed" ghost_gone
  grep -q "event=jobs.ghost_removed tier=large runner=$ghost runner_id=[0-9]* online=false" "$dir/host.log" \
    || fail "the removal was not logged: $(grep ghost "$dir/host.log")"
  agents | grep -q someone-elses-runner || fail "a registration not named as ours was removed: $(agents)"
  [ "$(agents | tr ' ' '\n' | grep -c '^np-')" = 2 ] || fail "the running jobs' runners are not both registered: $(agents)"
  ctl metrics | grep -q '^nodeplane_scale_set_ghosts_removed_total{tier="large"} 1$' \
    || fail "the removal was not counted: $(ctl metrics | grep ghosts)"
  fake_release
  expect_each_job_run_once 2
  ;;
job-reasons)
  # Issue 49: a waiting job says why, on the production path (the fake
  # Actions service, real processes): while GitHub holds its runner's
  # registration (a runner booting), behind the tier's ceiling, and through
  # a session outage; the metrics count each reason. jobs list prints none
  # of the control bytes a job's name carries (review D12), and jobs show
  # links the run.
  ceiling=1 config_mode=metrics scale_set_config ''
  nodes=1 start_scale_set_fleet
  queue_named() {  # queue_named NAME: one held job named NAME; prints its id
    fake /_fake/actions/queue -X POST -H 'content-type: application/json' \
      -d "$(python3 -c 'import json,sys; print(json.dumps({"scale_set":"np-large","count":1,"hold":True,"display_name":sys.argv[1]}))' "$1")" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)[0])'
  }
  says() {  # says JOB REASON TEXT: jobs list gives JOB that reason, its words holding TEXT
    ctl --json jobs list | python3 -c 'import json,sys
j=[e for e in json.load(sys.stdin) if e["job_id"]==sys.argv[1]]
sys.exit(0 if j and j[0]["reason"]==sys.argv[2] and sys.argv[3] in j[0]["why"] else 1)' "$1" "$2" "$3"
  }
  counted() {  # counted REASON: the wait metric has counted REASON
    ctl metrics | grep -Eq "^nodeplane_job_waits_total\{tier=\"large\",reason=\"$1\"\} [1-9]"
  }
  # A runner booting: GitHub holds its registration 6 s.
  fake /_fake/fault -X POST -H 'content-type: application/json' \
    -d '{"match":"generatejitconfig","times":1,"delay_ms":6000}' >/dev/null || fail "the fake refused the fault"
  first=$(queue_named $'red \e[31mALERT\e]0;owned\a build\r')
  wait_until "the first job to wait for its booting runner" says "$first" runner_booting "runner booting on node n1"
  wait_until "the booting wait to be counted" counted runner_booting
  wait_until "the first job to run" says "$first" running "running on node n1"
  second=$(queue_named "second")
  wait_until "the second job to wait behind the ceiling" says "$second" ceiling "tier large: 1 of 1 runners busy, ceiling reached"
  wait_until "the ceiling wait to be counted" counted ceiling
  # A session outage: GitHub drops the session and refuses a new one.
  fake /_fake/actions/faults -X POST -H 'content-type: application/json' -d '{"status":503,"count":100000}' >/dev/null
  fake /_fake/actions/expire_sessions -X POST >/dev/null
  wait_until "the second job to wait for the session" says "$second" session_down "GitHub session for scale set np-large down for"
  wait_until "the session wait to be counted" counted session_down
  ctl metrics | grep -q '^nodeplane_scale_set_session_up{tier="large"} 0$' || fail "the session is not shown down"
  ctl metrics | grep -q '^nodeplane_jobs_waiting{tier="large",reason="session_down"} 1$' \
    || fail "no job waiting for the session: $(ctl metrics | grep nodeplane_jobs_waiting)"
  # Strings from GitHub reach the terminal escaped.
  ctl jobs list >"$dir/jobs.txt" || fail "jobs list failed"
  python3 - "$dir/jobs.txt" <<'PY' || fail "jobs list printed a control byte: $(cat -v "$dir/jobs.txt")"
import sys
data = open(sys.argv[1], "rb").read()
bad = [b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f]
if bad: sys.exit("control bytes %s" % sorted(set(bad)))
if b"red \\x1b[31mALERT\\x1b]0;owned\\x07 build\\x0d" not in data: sys.exit("the name is not shown escaped")
PY
  ctl jobs show "$first" | grep -q "^link: https://github.com/acme/widgets/actions/runs/[0-9]*$" \
    || fail "jobs show gives no run link: $(ctl jobs show "$first")"
  ctl jobs show "$first" | grep -q '^runs_on: \["np-large"\]$' || fail "jobs show lacks runs-on: $(ctl jobs show "$first")"
  for want in '^workflow: ci.yml$' '^ref: refs/heads/main$' '^event: push$' '^runner_started_at_ns: 20' '^launch_sent_at_ns: 20'; do
    ctl jobs show "$first" | grep -q "$want" || fail "jobs show lacks $want: $(ctl jobs show "$first")"
  done
  fake /_fake/actions/faults -X POST -H 'content-type: application/json' -d '{"status":503,"count":0}' >/dev/null
  fake_release
  expect_each_job_run_once 2
  wait_s=60 wait_until "both jobs to be finished" bash -c "$bin/nodeplanectl --config $dir/nodeplane.toml --json jobs list \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); sys.exit(0 if len(j)==2 and all(e[\"state\"]==\"finished\" for e in j) else 1)'"
  ctl metrics | grep -q '^nodeplane_job_stage_seconds_count{tier="large",stage="startup"} 2$' \
    || fail "the startup stage was not measured: $(ctl metrics | grep nodeplane_job_stage)"
  ;;
sqlite-one-process)
  # Issue 20: a SQLite ledger is one process's: a second nodeplaned on the
  # same file refuses to start, naming the process that has it, and the
  # first goes on serving.
  write_config
  start_host
  "$bin/nodeplaned" --config "$dir/nodeplane.toml" --plugin-dir "$plugins" 2>"$dir/second.log"
  rc=$?
  [ $rc = 1 ] || fail "the second nodeplaned exited $rc"
  grep -q "ledger.db is open in another process (pid $host)" "$dir/second.log" \
    || fail "the refusal does not name the first process: $(cat "$dir/second.log")"
  grep -q "PostgreSQL ledger" "$dir/second.log" || fail "the refusal does not say what to do"
  ctl status >/dev/null || fail "the first nodeplaned stopped serving"
  ;;
ha-failover)
  # Issue 20: two replicas ([ha]) on the PostgreSQL ledger, three nodes given
  # both, 300 scale-set jobs. Each replica runs under a supervisor that
  # starts it again at once when it exits (as systemd's Restart= does), so a
  # killed one comes back as a standby. The active replica is SIGKILLed ten
  # times at moments spread over the run, SIGSTOPped once past its term and
  # then resumed (it must notice and exit 75, fenced), and PostgreSQL is
  # restarted once. Afterwards every job ran exactly once and every lease
  # ended done; the takeover times are printed.
  [ -n "${NODEPLANE_TEST_PG_DSN:-}" ] || { echo "NODEPLANE_TEST_PG_DSN is not set: skipped"; exit 77; }
  ceiling=6 session_retry=1s scale_set_config ',"session_idle_seconds":2' two
  sed -i '/^\[plugins\.ledger\]/,/^quarantine_grace_seconds/d' "$dir/nodeplane.toml"
  read -r pa pb < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
  for r in a b; do
    p=$([ $r = a ] && echo $pa || echo $pb)
    sed -e "s|^state_dir = .*|state_dir = \"$dir/host-$r\"|" -e "s|^listen = \"127.0.0.1:$port\"|listen = \"127.0.0.1:$p\"|" \
      "$dir/nodeplane.toml" >"$dir/$r.toml"
    postgres_ledger "ha_$$" "barrier_grace_seconds = 1" "quarantine_grace_seconds = 1" >>"$dir/$r.toml"
    cat >>"$dir/$r.toml" <<TOML
[ha]
replica = "$r"
advertise = "127.0.0.1:$p"
term = "8s"
TOML
  done
  supervise() {  # supervise R: runs replica R again whenever it exits; its pid in R.pid
    while [ ! -e "$dir/stop" ]; do
      "$bin/nodeplaned" --config "$dir/$1.toml" --plugin-dir "$plugins" 2>>"$dir/$1.log" &
      echo $! >"$dir/$1.pid"
      wait $!
      echo "exit $?" >>"$dir/$1.exits"
    done
  }
  supervise a & pids+=($!)
  supervise b & pids+=($!)
  role() { curl -sS --max-time 1 "http://127.0.0.1:$1/healthz" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p'; }
  active_port() { for p in $pa $pb; do [ "$(role $p)" = ok ] && { echo $p; return 0; }; done; return 1; }
  wait_until "one replica to lead" active_port
  [ "$(role $pa)$(role $pb)" = okstandby ] || [ "$(role $pa)$(role $pb)" = standbyok ] \
    || fail "not one active and one standby: $(role $pa) $(role $pb)"
  # A standby refuses the node wire with the active one's address, and its
  # admin socket names it.
  standby=$([ "$(role $pa)" = ok ] && echo $pb || echo $pa)
  code=$(curl -sS -o "$dir/refusal.json" -w '%{http_code}' -X POST "http://127.0.0.1:$standby/v1/register" -d '{}')
  [ "$code" = 503 ] && grep -q "\"active\":\"127.0.0.1:$(active_port)\"" "$dir/refusal.json" \
    || fail "the standby answered $code $(cat "$dir/refusal.json")"
  ctl() { local r out; for r in a b; do out=$("$bin/nodeplanectl" --config "$dir/$r.toml" "$@" 2>&1) && { echo "$out"; return 0; }; done; echo "$out"; return 1; }
  for n in 1 2 3; do
    "$bin/nodeplane-node" run --server "127.0.0.1:$pa,127.0.0.1:$pb" --name "n$n" --state-dir "$dir/n$n" \
      --deployment e2e --vcpu 4 --memory 4GiB 2>>"$dir/n$n.log" &
    pids+=($!)
  done
  for n in 1 2 3; do wait_until "n$n to register" node_is "n$n" live; done
  queue_jobs 150
  scale_set=np-small queue_jobs 150
  done_jobs() { fake /_fake/actions/jobs | python3 -c 'import json,sys; print(sum(j["state"]=="done" for j in json.load(sys.stdin)))'; }
  now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
  takeovers=()
  generation() { curl -sS --max-time 1 "http://127.0.0.1:$1/healthz" | sed -n 's/.*"generation":\([0-9]*\).*/\1/p'; }
  newer_active() {  # newer_active GEN [PAUSED]: a replica other than PAUSED serves as active at a generation after GEN
    local p
    for p in $pa $pb; do
      [ "$p" != "${2:-}" ] && [ "$(role $p)" = ok ] && [ "$(generation $p)" -gt "$1" ] && return 0
    done
    return 1
  }
  # takeover HOW: stops the active replica with signal HOW (KILL or STOP)
  # and waits until a replica serves as active at a later generation (the
  # other one, or the killed one back first, restarted by its supervisor);
  # records how long that took.
  # The active replica and its generation, read together: one that loses its
  # term between the two reads (a reset connection, an empty answer) is
  # asked again rather than compared as generation "".
  active_generation() { from=$(active_port) && gen=$(generation "$from") && [ -n "$gen" ]; }
  takeover() {
    local from gen t0
    wait_until "a replica to be active and tell its generation" active_generation
    stopped=$([ "$from" = $pa ] && echo a || echo b)
    t0=$(now_ms)
    kill -$1 "$(cat "$dir/$stopped.pid")"
    # A paused replica accepts connections and never answers: asking it
    # would only cost a timeout per round.
    wait_s=60 wait_until "a replica to take over from generation $gen" newer_active "$gen" "$([ $1 = STOP ] && echo "$from")"
    takeovers+=($(( $(now_ms) - t0 )))
  }
  back_as_standby() {  # the stopped replica serves again, as a standby or (it won first) as the active one
    local p=$([ $stopped = a ] && echo $pa || echo $pb)
    wait_s=60 wait_until "replica $stopped to be back" bash -c "[ -n \"\$(curl -sS --max-time 1 http://127.0.0.1:$p/healthz)\" ]"
  }
  for k in $(seq 1 10); do
    wait_s=180 wait_until "$((k * 25)) jobs to be done" bash -c "[ \$(curl -fsS http://127.0.0.1:$gh_port/_fake/actions/jobs \
      | python3 -c 'import json,sys; print(sum(j[\"state\"]==\"done\" for j in json.load(sys.stdin)))') -ge $((k * 25)) ]"
    echo "SIGKILL $k after $(done_jobs) jobs"
    takeover KILL
    back_as_standby
    if [ $k = 5 ]; then
      # Paused past its term: the other takes over; resumed, the old leader
      # finds its deadline gone and exits 75 (the ledger fenced it anyway).
      echo "SIGSTOP after $(done_jobs) jobs"
      exits_before=$(grep -c "exit 75" "$dir/"*.exits 2>/dev/null | awk -F: '{s+=$2} END {print s+0}')
      takeover STOP
      kill -CONT "$(cat "$dir/$stopped.pid")"
      wait_until "the resumed leader to fence itself and exit 75" bash -c \
        "[ \$(cat $dir/*.exits 2>/dev/null | grep -c 'exit 75') -gt $exits_before ]"
      grep -q "event=ha.demoted replica=$stopped" "$dir/$stopped.log" || fail "the resumed leader did not log ha.demoted"
      back_as_standby
    fi
    if [ $k = 7 ] && [ -n "${NODEPLANE_TEST_PG_PAUSE:-}" ]; then
      echo "PostgreSQL restarted after $(done_jobs) jobs"
      $NODEPLANE_TEST_PG_PAUSE >/dev/null && $NODEPLANE_TEST_PG_RESUME >/dev/null || fail "PostgreSQL did not restart"
    fi
  done
  expect_each_job_run_once 300
  cp "$dir/$( [ "$(active_port)" = $pa ] && echo a || echo b).toml" "$dir/nodeplane.toml"
  expect_fleet_settled 300
  printf '%s\n' "${takeovers[@]}" | sort -n | python3 -c 'import sys
t=[int(x) for x in sys.stdin]; print("takeover ms: n=%d min=%d median=%d max=%d" % (len(t), t[0], t[len(t)//2], t[-1]))'
  touch "$dir/stop"
  ;;
job-isolation|container-isolation)
  # Issue 48 §1 and §2 (review D2): a workflow is hostile code. Two jobs on
  # one enrolled node each try to read the node's key and state directory,
  # the agent's environment (and a variable set only for the agent), a
  # sibling runner's JIT config in its environment, and any JIT config on a
  # command line. Every try is denied, and the jobs still run to their end:
  # under the process provider (each job its own uid) and in containers.
  node_args=()
  if [ $case = container-isolation ]; then
    use_engine
    # The fake runner in the image reaches the fake GitHub on loopback.
    tier_provider=container runner_cmd='"/fake_runner.sh"' runner_wrap="\"sh\", \"/isolation_probe.sh\", \"$dir/n1\""
    tier_extra="image = \"$image\""$'\n'"network = \"host\""
    node_args=(--provider container --engine-socket "$engine")
  else
    runner_wrap="\"sh\", \"$src/tests/e2e/isolation_probe.sh\", \"$dir/n1\""
  fi
  config_mode=tls scale_set_config ''
  start_host
  enroll_node n1
  E2E_AGENT_SECRET=agent-only start_node n1 --tls "${node_args[@]}"
  wait_until "n1 to register" node_is n1 live
  wait_until "the scale set's session" grep -q "event=jobs.session_opened tier=large" "$dir/host.log"
  probed() { [ "$(grep -l "probe cmdline_jit=" "$dir"/n1/jobs/*.log 2>/dev/null | wc -l)" -ge "$1" ]; }
  if [ $case = job-isolation ]; then
    queue_jobs 1 hold
    wait_until "the first job's probe" probed 1
    queue_jobs 1 hold  # its probe runs while the first runner holds its job
    wait_until "the second job's probe" probed 2
    fake_release
    expect_each_job_run_once 2
  else
    # A container's log is kept when it exits.
    queue_jobs 2
    expect_each_job_run_once 2
    wait_until "both jobs' logs" probed 2
  fi
  cat "$dir"/n1/jobs/*.log | grep "^probe " | sort | uniq -c
  leaks=$(grep -h "^probe .*=\(leak\|no-jit-config\)" "$dir"/n1/jobs/*.log)
  [ -z "$leaks" ] || fail "a job reached what it must not: $leaks"
  if [ $case = job-isolation ]; then
    uids=$(grep -ho "^probe uid=[0-9]*" "$dir"/n1/jobs/*.log | sort -u)
    [ "$(wc -l <<<"$uids")" = 2 ] || fail "the two jobs did not run as two users: $uids"
    grep -q "probe uid=0 " "$dir"/n1/jobs/*.log && fail "a job ran as root"
    ls "$dir/n1-work" 2>/dev/null | grep -q . && fail "a lease's work directory was left: $(ls "$dir/n1-work")"
  else
    wait_until "every container to be removed" no_containers_left
  fi
  ;;
container-runner)
  # Issue 48 §2: a lease's runner in a container of its own, with the
  # tier's capacity enforced by the engine and its lease in its environment.
  # The agent SIGKILLed and restarted finds the running container by label
  # and holds its lease again (nothing lost, nothing run twice); a destroy
  # then reaches the job as SIGTERM; its log is kept, its container removed.
  use_engine
  write_config
  cat >>"$dir/nodeplane.toml" <<TOML
[tiers.box]
vcpu = 1
memory = "256MiB"
providers = ["container"]
image = "$image"
network = "none"
pids_limit = 128
stop_grace = "5s"
TOML
  start_host
  start_container_node n1
  wait_until "n1 to register" node_is n1 live
  launch_tier box 1
  wait_until "the job to run" lease_is "$lease" busy
  container_running() { engine_api "/containers/np-$1/json" | grep -q '"Running": *true'; }
  wait_until "its container to run" container_running "$lease"
  engine_api "/containers/np-$lease/json" | python3 -c 'import json,sys
c=json.load(sys.stdin); h=c["HostConfig"]; env=c["Config"]["Env"]; l=c["Config"]["Labels"]
assert h["Memory"]==268435456 and h["MemorySwap"]==268435456, ("memory", h["Memory"], h["MemorySwap"])
assert h["NanoCpus"]==1000000000 and h["PidsLimit"]==128 and h["NetworkMode"]=="none", ("limits", h)
assert "RUNNER_MANUALLY_TRAP_SIG=1" in env and "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1" in env, env
assert l["nodeplane.lease"]==sys.argv[1] and l["nodeplane.node"]=="n1" and l["nodeplane.deployment"]=="e2e", l' "$lease" \
    || fail "the container is not the tier's: $(engine_api "/containers/np-$lease/json")"
  kill -KILL $node; wait $node 2>/dev/null
  start_container_node n1
  wait_until "the restarted agent to hold the running lease" grep -q "event=node.lease_held lease=$lease" "$dir/n1.log"
  grep -q "event=node.leftover_adopted lease=$lease" "$dir/n1.log" || fail "the container was not adopted"
  container_running "$lease" || fail "the container did not survive the agent's restart"
  # The agent that launched it is gone: by R27 only that process could
  # confirm the compute is gone, so the answer is custody, and the
  # restarted agent stops the container all the same.
  out=$(ctl destroy --request-id 1 2>&1) && fail "a destroy was confirmed by a process that did not launch: $out"
  [[ "$out" == *"cannot be reached to confirm its compute is gone"* ]] || fail "destroy: $out"
  wait_until "the lease to end" bash -c "! $bin/nodeplanectl --config $dir/nodeplane.toml --json leases show $lease | grep -q '\"phase\":\"busy\"'"
  wait_until "the container to be removed" bash -c "! curl -fsS --unix-socket $engine http://d/v1.41/containers/np-$lease/json"
  log="$dir/n1/jobs/$lease.log"
  grep -q "job start lease=$lease uid=1001 trap=1" "$log" || fail "the job did not run as the image's user with its lease: $(cat "$log")"
  grep -q "job got SIGTERM" "$log" || fail "the destroy did not reach the job as SIGTERM: $(cat "$log")"
  [ "$(grep -c "job start" "$log")" = 1 ] || fail "the job ran twice: $(cat "$log")"
  no_containers_left || fail "containers left: $(containers_left)"
  ;;
container-limits)
  # Issue 48 §2: the engine enforces the tier's memory (swap = memory, or
  # podman never OOM-kills); an image the node lacks is a clean launch
  # failure that names it (nothing started); a runner GitHub finds outdated
  # (exit 7) fails its lease with a reason saying so.
  use_engine
  write_config
  for t in small:64MiB:'"/bin/sh", "-c", "JOB_ALLOCATE_MB=200 JOB_SECONDS=0 exec /job.sh"' \
           gone:256MiB:'"/job.sh"' old:256MiB:'"/bin/sh", "-c", "JOB_SECONDS=0 JOB_EXIT=7 exec /job.sh"'; do
    IFS=: read -r name mem cmd <<<"$t"
    img=$image
    [ "$name" = gone ] && img=localhost/nodeplane-no-such-image:1
    printf '[tiers.%s]\nvcpu = 1\nmemory = "%s"\nproviders = ["container"]\nimage = "%s"\nnetwork = "none"\ncommand = [%s]\n' \
      "$name" "$mem" "$img" "$cmd" >>"$dir/nodeplane.toml"
  done
  start_host
  start_container_node n1
  wait_until "n1 to register" node_is n1 live
  reason_of() { ctl --json leases show "$1" | sed -n 's/.*"failure_reason":"\([^"]*\)".*/\1/p'; }
  launch_tier small 1
  wait_until "the memory hog's lease to fail" lease_is "$lease" failed
  [[ "$(reason_of "$lease")" == *"code 137"* ]] || fail "the memory limit did not kill it: $(reason_of "$lease"); $(cat "$dir/n1/jobs/$lease.log")"
  grep -q "job allocated" "$dir/n1/jobs/$lease.log" && fail "200 MiB fitted in a 64 MiB tier"
  out=$(ctl --json launch --tier gone --request-id 2) && fail "a launch from a missing image succeeded: $out"
  [[ "$out" == *'image \"localhost/nodeplane-no-such-image:1\" is not on this node'*"nothing was started"* ]] \
    || fail "the refusal does not name the image: $out"
  lease=$(sed -n 's/.*lease \([0-9a-f]*\):.*/\1/p' <<<"$out")
  lease_is "$lease" failed || fail "the missing image's lease is $(phase_of "$lease")"
  launch_tier old 3
  wait_until "the outdated runner's lease to fail" lease_is "$lease" failed
  [[ "$(reason_of "$lease")" == *"runner is outdated"* ]] || fail "exit 7 was not called outdated: $(reason_of "$lease")"
  # The tier stops launching, says why, and launches again once resumed.
  ctl --json status | grep -q '"paused_tiers":"old: the runner of lease '"$lease"' on node \\"n1\\" was refused' \
    || fail "status does not say the tier is paused: $(ctl --json status)"
  ctl metrics | grep -q '^nodeplane_tier_paused{tier="old"} 1$' || fail "no paused-tier metric: $(ctl metrics | grep tier_paused)"
  out=$(ctl --json launch --tier old --request-id 4) && fail "a paused tier launched: $out"
  [[ "$out" == *'tier \"old\" is paused'*"nodeplanectl tiers resume old"* ]] || fail "the refusal does not say the tier is paused: $out"
  ctl tiers resume old >/dev/null || fail "resume refused"
  ctl tiers resume old >/dev/null 2>&1 && fail "a tier not paused was resumed"
  launch_tier old 5
  wait_until "the resumed tier's runner to run (and fail outdated again)" lease_is "$lease" failed
  wait_until "every container to be removed" no_containers_left
  ;;
*)
  fail "unknown case $case"
  ;;
esac
echo "ok: $case"
