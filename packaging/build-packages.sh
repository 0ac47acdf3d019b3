#!/bin/bash
# Builds the Debian packages into build-pkg/ (prefix /usr, multiarch libdir).
# usage: build-packages.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-pkg}
cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DNODEPLANE_TESTS=ON ${CI:+-DNODEPLANE_WERROR=ON} >/dev/null
cmake --build "$out" -j2
(cd "$out" && cpack -G DEB >/dev/null)
ls "$out"/*.deb
