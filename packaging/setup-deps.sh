#!/bin/bash
# Installs nodeplane's build and test dependencies from Debian bookworm's
# archive, and nothing from anywhere else. Idempotent: when every package is
# already installed it changes nothing and does not touch the network.
set -euo pipefail

packages=(
  # toolchain
  cmake ninja-build ccache g++ clang libclang-rt-14-dev pkg-config
  # libraries (Boost 1.81: never libboost-all-dev, which is 1.74 and conflicts)
  libboost1.81-dev libboost-json1.81-dev libboost-system1.81-dev libboost-filesystem1.81-dev
  libssl-dev libtomlplusplus-dev libsoci-dev libsqlite3-dev libpq-dev libjemalloc-dev
  # tests (prometheus: promtool and a real scrape; chromium: the dashboard as a person sees it)
  googletest libgtest-dev postgresql curl openssl python3 prometheus chromium
  # the container provider's tests: rootful podman with runc (crun refuses
  # these machines' hybrid cgroups), and busybox for the offline test image
  podman runc busybox-static
  # packaging checks
  dpkg-dev file lintian systemd
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-deps: missing ${missing[*]}; run as root to install them" >&2
  exit 1
fi
echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-deps: done"
