#!/usr/bin/env python3
"""The fake GitHub Actions runner: a scale-set tier's command in the tests.

It reads its JIT config from ACTIONS_RUNNER_INPUT_JITCONFIG and removes it
from its environment, as GitHub's runner does (actions/runner
src/Runner.Listener/CommandSettings.cs) and presents it to the fake Actions service: `take` is parked
there until a job is assigned to its scale set, `finish` until the job is
released (a held job) or at once. Then it exits 0: one job, like a real
ephemeral JIT runner. It never prints the config. Exits 3 when no job came
within FAKE_RUNNER_WAIT_S (an idle runner the statistics over-counted), or
when its registration was removed meanwhile (a retired idle runner). What
GitHub's own runner exits with when its registration is removed is not
established from a source here; nothing depends on the code: the node ends
the lease of a runner the ledger marked deregistered done, whatever its
runner exits with (node_agent.cpp, Deregistered).

FAKE_RUNNER_TAKE_AFTER: "requeued" or "canceled": asks for a job only once
the fake says some job was re-queued (GitHub's pickup window passed with no
runner) or cancelled: a runner slow to come up, ordered by the fake's state
rather than by a clock.
FAKE_RUNNER_RESULT: the job's result to report (default "succeeded").
FAKE_RUNNER_MARK_DIR: where to leave "<pid>.signalled" when the runner is
sent SIGTERM, so a test can prove no runner was ever signalled.
"""
import base64, json, os, signal, sys, urllib.request, urllib.error

config_text = os.environ.pop("ACTIONS_RUNNER_INPUT_JITCONFIG", "")
if not config_text:
    print("fake_runner: no ACTIONS_RUNNER_INPUT_JITCONFIG", file=sys.stderr)
    sys.exit(2)
service = json.loads(base64.b64decode(config_text))["service"]
wait_s = float(os.environ.get("FAKE_RUNNER_WAIT_S", "120"))
mark_dir = os.environ.get("FAKE_RUNNER_MARK_DIR", "")


def signalled(signum, frame):
    if mark_dir:
        with open(os.path.join(mark_dir, "%d.signalled" % os.getpid()), "w") as f:
            f.write("signal %d\n" % signum)
    print("fake_runner: signalled (%d)" % signum, flush=True)
    sys.exit(143)


signal.signal(signal.SIGTERM, signalled)


def post(path, body):
    req = urllib.request.Request(service + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=wait_s + 300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


take_after = os.environ.get("FAKE_RUNNER_TAKE_AFTER", "")
if take_after:
    post("/_fake/actions/await", {"event": take_after})
status, body = post("/actions-runner/take", {"jit": config_text, "wait_ms": int(wait_s * 1000)})
if status != 200:
    print(f"fake_runner: no job ({status})", file=sys.stderr)
    sys.exit(3)
print(f"fake_runner: running {json.loads(body)['job_id']}", flush=True)
status, _ = post("/actions-runner/finish", {"jit": config_text, "result": os.environ.get("FAKE_RUNNER_RESULT", "succeeded")})
sys.exit(0 if status == 204 else 4)
