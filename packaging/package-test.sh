#!/bin/bash
# Builds the Debian packages and checks them as a distribution would:
# lintian (no errors), systemd-analyze verify on the units, then installs
# them into a throwaway root and checks that the installed host validates
# its installed default config with the installed SQLite plugin, that the
# PostgreSQL ledger and the GitHub JIT source are one subpackage away, and
# that a plugin built out of tree with only the -dev package (pkg-config)
# loads in the installed host and passes the installed conformance program.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build
bash packaging/build-packages.sh "$out" >/dev/null
debs=("$out"/*.deb)
echo "packages: ${debs[*]##*/}"

lintian --fail-on error --tag-display-limit 0 "${debs[@]}" 2>&1 | grep -v 'root privileges' || true
lintian --fail-on error "${debs[@]}" >/dev/null 2>&1 || { echo "FAIL: lintian reported errors"; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$root"; done
for deb in "${debs[@]}"; do
  if dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst 2>/dev/null | grep -q 'systemctl\|deb-systemd-invoke'; then
    echo "FAIL: ${deb##*/} starts a service at install"; exit 1
  fi
done

# The units, pointed at the installed binaries (verify checks they exist);
# any complaint (an unknown key, a value it ignores) fails.
units=$(mktemp -d)
for unit in nodeplaned.service nodeplane-node.service; do
  sed "s|/usr/sbin/|$root/usr/sbin/|g; s|/usr/bin/|$root/usr/bin/|g; s|/etc/nodeplane/|$root/etc/nodeplane/|g" \
    "$root/lib/systemd/system/$unit" >"$units/$unit"
done
if ! report=$(systemd-analyze verify "$units"/*.service 2>&1) || grep -qi "unknown\|ignoring\|failed" <<<"$report"; then
  echo "FAIL: systemd-analyze verify: $report"; exit 1
fi
rm -rf "$units"

plugins=$(echo "$root"/usr/lib/*/nodeplane/plugins-1)
"$root/usr/sbin/nodeplaned" --version | grep -q "plugin ABI 1..1" || { echo "FAIL: --version lacks the ABI range"; exit 1; }
"$root/usr/sbin/nodeplaned" --check-config --config "$root/etc/nodeplane/nodeplane.toml" --plugin-dir "$plugins"

# PostgreSQL: a config edit plus the subpackage (installed above).
sed 's/^library = "ledger-sqlite"/library = "ledger-postgres"/; s|^path = "ledger.db".*|dsn = "host=/run/postgresql dbname=nodeplane"|' \
  "$root/etc/nodeplane/nodeplane.toml" >"$root/pg.toml"
"$root/usr/sbin/nodeplaned" --check-config --config "$root/pg.toml" --plugin-dir "$plugins"

# GitHub: a target whose JIT source is the github subpackage's plugin.
cat "$root/etc/nodeplane/nodeplane.toml" - >"$root/with-github.toml" <<TOML

[targets.acme]
jit = "github-acme"

[plugins.github-acme]
library = "jit-github"
provides = ["jit"]

[plugins.github-acme.config]
organization = "acme"
app_id = 12345
private_key_file = "/etc/nodeplane/github-acme.pem"
TOML
"$root/usr/sbin/nodeplaned" --check-config --config "$root/with-github.toml" --plugin-dir "$plugins"

# An out-of-tree plugin in C from the -dev package alone.
pc() { pkg-config --define-variable=prefix="$root/usr" "$@" nodeplane-plugin; }
export PKG_CONFIG_PATH=$(echo "$root"/usr/lib/*/pkgconfig)
cc -std=c99 -Wall -Werror -fPIC -fvisibility=hidden $(pc --cflags) -o "$root/deny-owner.so" \
  "$root/usr/share/doc/nodeplane-plugin-dev/deny_owner.c" $(pc --libs)
cat "$root/etc/nodeplane/nodeplane.toml" - >"$root/with-example.toml" <<TOML

[plugins.cache]
library = "$root/deny-owner.so"
provides = ["cache_policy"]

[plugins.cache.config]
deny_owner = "evil"
TOML
"$root/usr/sbin/nodeplaned" --check-config --config "$root/with-example.toml" --plugin-dir "$plugins"
"$root/usr/bin/policy-conformance" --interface cache_policy --plugin "$root/deny-owner.so" \
  --config '{"deny_owner": "evil"}' --allowed good/repo --denied evil/repo --gtest_brief=1
echo "ok: packages"
