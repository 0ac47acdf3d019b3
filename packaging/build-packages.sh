#!/bin/bash
# Builds the Debian packages from the tests' tree (build/ unless given):
# the same configuration run-tests.sh builds, so in CI nothing is rebuilt.
# usage: build-packages.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
bash packaging/build.sh "$dir" -DNODEPLANE_TESTS=ON
(cd "$dir" && rm -f ./*.deb && cpack -G DEB >/dev/null)
ls "$dir"/*.deb
