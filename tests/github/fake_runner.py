#!/usr/bin/env python3
"""The fake GitHub Actions runner: a scale-set tier's command in the tests.

It reads its JIT config from NODEPLANE_JIT_CONFIG (as the reference node
passes it), presents it to the fake Actions service to take the next job
assigned to its scale set, "runs" it for the job's work_ms, reports it
finished, and exits 0: one job, like a real ephemeral JIT runner. It never
prints the config. Exits 3 when no job came within FAKE_RUNNER_WAIT_S.
"""
import base64, json, os, sys, time, urllib.request, urllib.error

config_text = os.environ.get("NODEPLANE_JIT_CONFIG", "")
if not config_text:
    print("fake_runner: no NODEPLANE_JIT_CONFIG", file=sys.stderr)
    sys.exit(2)
service = json.loads(base64.b64decode(config_text))["service"]


def post(path, body):
    req = urllib.request.Request(service + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


deadline = time.time() + float(os.environ.get("FAKE_RUNNER_WAIT_S", "120"))
while True:
    status, body = post("/actions-runner/take", {"jit": config_text})
    if status == 200:
        job = json.loads(body)
        break
    if status != 204 or time.time() > deadline:
        print(f"fake_runner: no job ({status})", file=sys.stderr)
        sys.exit(3)
    time.sleep(0.2)
print(f"fake_runner: running {job['job_id']}", flush=True)
time.sleep(job.get("work_ms", 0) / 1000.0)
status, _ = post("/actions-runner/finish", {"jit": config_text, "result": "succeeded"})
sys.exit(0 if status == 204 else 4)
