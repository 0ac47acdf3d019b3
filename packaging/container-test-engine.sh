#!/bin/bash
# A throwaway container engine for the container provider's tests: rootful
# podman serving Docker's Engine API on a socket of its own, with the
# settings these machines need (docs/reference container-provider.md §2:
# runc, cgroupfs, file events, ulimits within the hard limits), and the test
# image localhost/nodeplane-test-job:1 built offline from busybox-static.
#   container-test-engine.sh start   prints the socket of a ready engine
#   container-test-engine.sh stop DIR   stops it and removes every container and image it made
# Needs root and `podman runc busybox-static` (packaging/setup-deps.sh).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
start)
  d=$(mktemp -d /tmp/nodeplane-engine.XXXXXX)
  cat >"$d/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  export CONTAINERS_CONF=$d/containers.conf
  # The image: busybox with relative links (an absolute one would point at
  # the host's path), the stand-in job, runner and hostile probe.
  root=$d/rootfs
  mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,root,home/runner}
  cp /bin/busybox "$root/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nrunner:x:1001:1001:runner:/home/runner:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nrunner:x:1001:\n' >"$root/etc/group"
  chmod 1777 "$root/tmp"
  chown 1001:1001 "$root/home/runner"
  install -m 755 "$src/tests/e2e/container/job.sh" "$root/job.sh"
  install -m 755 "$src/tests/e2e/container/fake_runner.sh" "$root/fake_runner.sh"
  install -m 755 "$src/tests/e2e/isolation_probe.sh" "$root/isolation_probe.sh"
  tar -C "$root" -cf "$d/rootfs.tar" .
  podman import -q --change 'CMD ["/job.sh"]' --change 'USER runner' --change 'WORKDIR /home/runner' \
    "$d/rootfs.tar" localhost/nodeplane-test-job:1 >/dev/null
  rm -rf "$root" "$d/rootfs.tar"
  podman system service --time=0 "unix://$d/podman.sock" >"$d/service.log" 2>&1 &
  echo $! >"$d/service.pid"
  for _ in $(seq 100); do
    [ -S "$d/podman.sock" ] && curl -fsS --unix-socket "$d/podman.sock" http://d/_ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS --unix-socket "$d/podman.sock" http://d/_ping >/dev/null || { cat "$d/service.log" >&2; exit 1; }
  echo "$d/podman.sock"
  ;;
stop)
  d=$2
  export CONTAINERS_CONF=$d/containers.conf
  # What the tests and benchmarks made (their deployments), nothing else.
  for dep in e2e bench; do
    podman ps -aq --filter "label=nodeplane.deployment=$dep" | xargs -r podman rm -f >/dev/null 2>&1 || true
  done
  kill "$(cat "$d/service.pid")" 2>/dev/null || true
  podman rmi -f localhost/nodeplane-test-job:1 >/dev/null 2>&1 || true
  rm -rf "$d"
  ;;
*)
  echo "usage: container-test-engine.sh start | stop DIR" >&2
  exit 2
  ;;
esac
