#!/bin/bash
# README command two: set up, build, and run every test. With
# NODEPLANE_SANITIZERS=1 (as .ci/run sets) or CI=true, the unit, conformance
# and jit-github tests also run under AddressSanitizer with
# UndefinedBehaviorSanitizer, and under ThreadSanitizer, each in a unity
# build without the benchmarks (a third of the compile time). CI=true also
# builds with -Werror; builds the Plane by clang with -Wthread-safety as
# errors (NODEPLANE_THREAD_SAFETY); runs the wire's fuzz target for a bounded
# time (NODEPLANE_FUZZ_SECONDS, default 60); and builds and checks the Debian
# packages (packaging/package-test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup-deps.sh
bash packaging/setup-test-doubles.sh  # the GitHub API doubles for jit-github's tests (npm)

# A PostgreSQL 15 server for the PostgreSQL ledger's tests, stopped on exit.
pg_dsn=$(bash packaging/pg-test-server.sh start)
pg_dir=$(sed -n 's/^host=\([^ ]*\) .*/\1/p' <<<"$pg_dsn")
trap 'bash packaging/pg-test-server.sh stop "$pg_dir"' EXIT
export NODEPLANE_TEST_PG_DSN=$pg_dsn
export NODEPLANE_TEST_PG_PAUSE="bash $PWD/packaging/pg-test-server.sh pause $pg_dir"
export NODEPLANE_TEST_PG_RESUME="bash $PWD/packaging/pg-test-server.sh resume $pg_dir"
# A container engine (podman serving Docker's Engine API) and the test image
# for the container provider's cases, stopped on exit.
engine_sock=$(bash packaging/container-test-engine.sh start)
trap 'bash packaging/pg-test-server.sh stop "$pg_dir"; bash packaging/container-test-engine.sh stop "$(dirname "$engine_sock")"' EXIT
export NODEPLANE_TEST_ENGINE_SOCKET=$engine_sock

bash packaging/build.sh build -DNODEPLANE_TESTS=ON
(cd build && ctest -j2 --output-on-failure)

if [ "${CI:-}" = true ] || [ "${NODEPLANE_SANITIZERS:-}" = 1 ]; then
  sanitized=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_UNITY_BUILD=ON -DNODEPLANE_BENCHES=OFF)
  bash packaging/build.sh build-asan -DNODEPLANE_ASAN=ON -DNODEPLANE_UBSAN=ON "${sanitized[@]}"
  (cd build-asan && ctest -j2 -L 'unit|conformance|github' --output-on-failure)
  bash packaging/build.sh build-tsan -DNODEPLANE_TSAN=ON "${sanitized[@]}"
  (cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest -j2 -L 'unit|conformance|github' --output-on-failure)
fi

if [ "${CI:-}" = true ]; then
  # The Plane's lock discipline, checked by clang (-Wthread-safety as errors).
  CC=clang CXX=clang++ BUILD_TARGET=nodeplane_plane bash packaging/build.sh build-thread-safety -DNODEPLANE_THREAD_SAFETY=ON \
    -DNODEPLANE_TESTS=OFF -DNODEPLANE_PLUGIN_LEDGER_SQLITE=OFF -DNODEPLANE_PLUGIN_LEDGER_POSTGRES=OFF
  CC=clang CXX=clang++ BUILD_TARGET=wire-request-fuzz bash packaging/build.sh build-fuzz -DNODEPLANE_FUZZ=ON -DNODEPLANE_TESTS=OFF \
    -DNODEPLANE_PLUGIN_LEDGER_SQLITE=OFF -DNODEPLANE_PLUGIN_LEDGER_POSTGRES=OFF
  corpus=$(mktemp -d)
  cp tests/fuzz/corpus/* "$corpus"/
  build-fuzz/tests/fuzz/wire-request-fuzz -max_total_time="${NODEPLANE_FUZZ_SECONDS:-60}" -rss_limit_mb=1024 \
    -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
  rm -rf "$corpus"
  bash packaging/package-test.sh
fi
