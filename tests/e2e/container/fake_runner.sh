#!/bin/sh
# tests/github/fake_runner.py for an image without Python: the busybox test
# image's runner. It reads its JIT config from ACTIONS_RUNNER_INPUT_JITCONFIG
# (as GitHub's runner does), takes one job from the fake Actions service,
# finishes it, and exits 0; 3 when no job came; 4 when the finish failed.
cfg=${ACTIONS_RUNNER_INPUT_JITCONFIG:-}
unset ACTIONS_RUNNER_INPUT_JITCONFIG
[ -n "$cfg" ] || { echo "fake_runner: no ACTIONS_RUNNER_INPUT_JITCONFIG" >&2; exit 2; }
service=$(echo "$cfg" | base64 -d | sed -n 's/.*"service":"\([^"]*\)".*/\1/p')
wait_s=${FAKE_RUNNER_WAIT_S:-120}
# (busybox-static 1.35's wget crashes on -T: its default timeout is kept.)
post() { wget -q -O - --header 'content-type: application/json' --post-data "$2" "$service$1"; }
trap 'echo "fake_runner: signalled (15)"; exit 143' TERM
job=$(post /actions-runner/take "{\"jit\":\"$cfg\",\"wait_ms\":$((wait_s * 1000))}") || { echo "fake_runner: no job" >&2; exit 3; }
echo "fake_runner: running $(echo "$job" | sed -n 's/.*"job_id":"\([^"]*\)".*/\1/p')"
post /actions-runner/finish "{\"jit\":\"$cfg\",\"result\":\"${FAKE_RUNNER_RESULT:-succeeded}\"}" >/dev/null || exit 4
