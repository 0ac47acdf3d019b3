#!/bin/bash
# Configures and builds one tree. usage: build.sh BUILD_DIR [cmake -D options...]
# CI=true adds -Werror; BUILD_TARGET builds that target alone.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
opts=("$@")
[ "${CI:-}" = true ] && opts+=(-DNODEPLANE_WERROR=ON)
cmake -S . -B "$dir" -G Ninja "${opts[@]}" >/dev/null
cmake --build "$dir" -j2 ${BUILD_TARGET:+--target "$BUILD_TARGET"}
