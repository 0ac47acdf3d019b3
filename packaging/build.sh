#!/bin/bash
# Configures and builds one tree. usage: build.sh BUILD_DIR [cmake -D options...]
# Every tree is laid out for Debian (prefix /usr, multiarch libdir), so the
# tree the tests ran in is the one the packages are made from.
# CI=true adds -Werror; BUILD_TARGET builds that target alone.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
opts=(-DCMAKE_INSTALL_PREFIX=/usr "$@")
[ "${CI:-}" = true ] && opts+=(-DNODEPLANE_WERROR=ON)
cmake -S . -B "$dir" -G Ninja "${opts[@]}" >/dev/null
cmake --build "$dir" -j2 ${BUILD_TARGET:+--target "$BUILD_TARGET"}
