#!/bin/bash
# Runs policy-conformance against the project's own revocation-crl and
# cache-policy-rules plugins, with fixtures made here: a CA, two
# certificates and a CRL revoking one (by the openssl command); a rules file.
# usage: plugins_conformance.sh POLICY_CONFORMANCE PLUGIN_DIR SOURCE_DIR CASE
set -eu
bin=$1 plugins=$2 src=$3 case=$4
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
case $case in
revocation-crl)
  . "$src/tests/support/openssl_ca.sh"
  ca_init "$d" conformance
  ca_issue "$d" n1 conformance
  ca_issue "$d" n2 conformance
  ca_revoke "$d" n1
  ca_crl "$d" "$d/crl.pem"
  exec "$bin" --interface revocation --plugin "$plugins/revocation-crl.so" \
    --config "{\"crl_files\": [\"$d/crl.pem\"], \"ca_files\": [\"$d/ca.pem\"]}" \
    --revoked "$d/n1.pem" --good "$d/n2.pem" --gtest_brief=1
  ;;
cache-policy-rules)
  cat >"$d/rules.toml" <<'TOML'
default = "allow"
[[rules]]
owner = "acme"
repository = "secret-*"
action = "deny"
[[rules]]
owner = "evil*"
action = "deny"
TOML
  exec "$bin" --interface cache_policy --plugin "$plugins/cache-policy-rules.so" \
    --config "{\"rules_file\": \"$d/rules.toml\"}" \
    --allowed acme/public other/secret-x --denied acme/secret-keys evilcorp/anything ACME/Secret-Keys --gtest_brief=1
  ;;
esac
