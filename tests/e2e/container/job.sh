#!/bin/sh
# The stand-in job of the container e2e cases (docs/reference
# container-provider.md §4): says who and where it is, traps SIGTERM as
# GitHub's run.sh does with RUNNER_MANUALLY_TRAP_SIG, runs JOB_SECONDS, and
# exits JOB_EXIT. JOB_ALLOCATE_MB: first holds that much memory (the memory
# limit's case).
echo "job start lease=${NODEPLANE_LEASE_ID:-none} uid=$(id -u) trap=${RUNNER_MANUALLY_TRAP_SIG:-0}"
trap 'echo "job got SIGTERM"; exit 143' TERM
if [ -n "${JOB_ALLOCATE_MB:-}" ]; then
  # dd holds one block of bs bytes, filled from /dev/zero: that much memory.
  dd if=/dev/zero of=/dev/null bs="${JOB_ALLOCATE_MB}M" count=1 2>/dev/null || exit $?
  echo "job allocated ${JOB_ALLOCATE_MB} MiB"
fi
i=0
while [ "$i" -lt "${JOB_SECONDS:-300}" ]; do sleep 1 & wait $!; i=$((i+1)); done
echo "job done"
exit "${JOB_EXIT:-0}"
