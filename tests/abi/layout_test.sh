#!/bin/bash
# The plugin ABI's layout is frozen: every header compiles as pedantic C99 with
# gcc and with clang, includes nothing but <stdint.h>/<stddef.h> and its own
# headers, every struct's size and member offsets equal the golden file, and
# the golden only extends the layout released with v1.
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
# Against the layout released with the first packages (0.1.0): every struct
# is still there, no smaller; every member keeps its offset; a member added
# since lies past the released end. A change that breaks this is a new
# interface major, never an edit of v1.
released=$src/tests/abi/layout_v1_released.txt
problems=$(awk '
  NR == FNR { if ($2 == "size") rsize[$1] = $3; else roff[$1] = $2; next }
  $2 == "size" { size[$1] = $3; next }
  { off[$1] = $2 }
  END {
    for (t in rsize) {
      if (!(t in size)) print t " was removed"
      else if (size[t] + 0 < rsize[t] + 0) print t " shrank"
    }
    for (m in roff) {
      if (!(m in off)) print m " was removed or renamed"
      else if (off[m] != roff[m]) print m " moved from offset " roff[m] " to " off[m]
    }
    for (m in off) {
      if (m in roff) continue
      t = m; sub(/\.[^.]*$/, "", t)
      if ((t in rsize) && off[m] + 0 < rsize[t] + 0) print m " was inserted inside the released " t
    }
  }' "$released" "$src/tests/abi/layout_golden.txt")
[ -z "$problems" ] || fail "the v1 layout changed incompatibly since its release: $problems"

echo "ok: layout of $(grep -c ' size ' "$src/tests/abi/layout_golden.txt") structs matches with gcc and clang"
