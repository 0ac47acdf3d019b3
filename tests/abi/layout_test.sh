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

# Every struct begins with struct_size, so it can grow at its end.
for t in $(awk '$2 == "size" {print $1}' "$src/tests/abi/layout_golden.txt"); do
  grep -qx "$t.struct_size 0" "$src/tests/abi/layout_golden.txt" || fail "$t does not begin with struct_size"
done
# Only fixed-width types: no int/long/short/size_t/bool/enum in the headers.
bad=$(for h in "$inc"/nodeplane/*.h; do gcc -fpreprocessed -dD -E -P "$h" 2>/dev/null; done \
      | grep -nE '\b(int|unsigned|signed|short|long|size_t|bool|_Bool|enum)\b')
[ -z "$bad" ] || fail "non-fixed-width types in the ABI headers: $bad"

for cc in gcc clang; do
  command -v $cc >/dev/null || fail "$cc is not installed"
  $cc -std=c99 -pedantic -Werror -Wall -Wextra -I"$inc" "$src/tests/abi/layout.c" -o "$work/layout-$cc" \
    || fail "the ABI headers do not compile as C99 with $cc"
  "$work/layout-$cc" >"$work/$cc.txt"
  diff -u "$src/tests/abi/layout_golden.txt" "$work/$cc.txt" \
    || fail "$cc: the ABI layout differs from layout_golden.txt (members may only be appended)"
done
echo "ok: layout of $(grep -c ' size ' "$src/tests/abi/layout_golden.txt") structs matches with gcc and clang"
