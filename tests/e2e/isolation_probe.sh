#!/bin/sh
# A hostile job, run as a tier's command in the e2e case job-isolation: it
# tries to reach what a job must never reach and prints one line per try,
# "probe <what>=<leak|denied|clean>", then execs the rest of its arguments
# (the fake runner). usage: isolation_probe.sh NODE_STATE_DIR COMMAND...
state=$1
shift
# The node's private key, and a listing of its state directory.
if cat "$state/node.key" >/dev/null 2>&1; then echo "probe node_key=leak"; else echo "probe node_key=denied"; fi
if ls "$state" >/dev/null 2>&1; then echo "probe state_dir=leak"; else echo "probe state_dir=denied"; fi
# The agent's own environment (its parent) and anything it set for itself.
if cat "/proc/$PPID/environ" >/dev/null 2>&1; then echo "probe agent_environ=leak"; else echo "probe agent_environ=denied"; fi
if [ -n "${E2E_AGENT_SECRET:-}" ]; then echo "probe agent_env_inherited=leak"; else echo "probe agent_env_inherited=clean"; fi
# Another process's JIT config: in its environment, or on any command line.
leak=clean
for p in /proc/[0-9]*; do
  [ "${p#/proc/}" = $$ ] && continue
  if tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -q 'JITCONFIG=\|JIT_CONFIG='; then leak=leak; fi
done
echo "probe sibling_environ=$leak"
leak=clean
if [ -n "${ACTIONS_RUNNER_INPUT_JITCONFIG:-}" ]; then
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qF "$ACTIONS_RUNNER_INPUT_JITCONFIG"; then leak=leak; fi
  done
else
  leak=no-jit-config
fi
echo "probe cmdline_jit=$leak"
echo "probe uid=$(id -u) home=$HOME"
exec "$@"
