#!/usr/bin/env python3
"""The fake GitHub Actions runner: a scale-set tier's command in the tests.

It reads its JIT config from NODEPLANE_JIT_CONFIG (as the reference node
passes it) and presents it to the fake Actions service: `take` is parked
there until a job is assigned to its scale set, `finish` until the job is
released (a held job) or at once. Then it exits 0: one job, like a real
ephemeral JIT runner. It never prints the config. Exits 3 when no job came
within FAKE_RUNNER_WAIT_S (an idle runner the statistics over-counted).
"""
import base64, json, os, sys, urllib.request, urllib.error

config_text = os.environ.get("NODEPLANE_JIT_CONFIG", "")
if not config_text:
    print("fake_runner: no NODEPLANE_JIT_CONFIG", file=sys.stderr)
    sys.exit(2)
service = json.loads(base64.b64decode(config_text))["service"]
wait_s = float(os.environ.get("FAKE_RUNNER_WAIT_S", "120"))


def post(path, body):
    req = urllib.request.Request(service + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=wait_s + 300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


status, body = post("/actions-runner/take", {"jit": config_text, "wait_ms": int(wait_s * 1000)})
if status != 200:
    print(f"fake_runner: no job ({status})", file=sys.stderr)
    sys.exit(3)
print(f"fake_runner: running {json.loads(body)['job_id']}", flush=True)
status, _ = post("/actions-runner/finish", {"jit": config_text, "result": "succeeded"})
sys.exit(0 if status == 204 else 4)
