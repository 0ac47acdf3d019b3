#!/bin/bash
# The plugin ABI's layout is frozen: every header compiles as pedantic C99 with
# gcc and with clang, includes nothing but <stdint.h>/<stddef.h> and its own
# headers, and every struct's size and member offsets equal the golden file.
# usage: layout_test.sh SOURCE_DIR
set -u
src=$1
inc=$src/plugin-api/include
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for h in "$inc"/nodeplane/*.h; do
  bad=$(grep -E '^\s*#\s*include' "$h" | grep -vE '<stdint\.h>|<stddef\.h>|"nodeplane/[a-z0-9_]+\.h"')
  [ -z "$bad" ] || fail "$(basename "$h") includes more than the C99 fixed-width headers: $bad"
done

for cc in gcc clang; do
  command -v $cc >/dev/null || fail "$cc is not installed"
  $cc -std=c99 -pedantic -Werror -Wall -Wextra -I"$inc" "$src/tests/abi/layout.c" -o "$work/layout-$cc" \
    || fail "the ABI headers do not compile as C99 with $cc"
  "$work/layout-$cc" >"$work/$cc.txt"
  diff -u "$src/tests/abi/layout_golden.txt" "$work/$cc.txt" \
    || fail "$cc: the ABI layout differs from layout_golden.txt (members may only be appended)"
done
echo "ok: layout of $(grep -c ' size ' "$src/tests/abi/layout_golden.txt") structs matches with gcc and clang"
