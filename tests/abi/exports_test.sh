#!/bin/bash
# Every plugin exports exactly one dynamic symbol: np_plugin_entry.
# usage: exports_test.sh PLUGIN.so...
set -u
for so in "$@"; do
  syms=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^$' | sort)
  [ "$syms" = np_plugin_entry ] || { echo "FAIL: $so exports: $(echo $syms)"; exit 1; }
done
echo "ok: $# plugin(s) export np_plugin_entry alone"
