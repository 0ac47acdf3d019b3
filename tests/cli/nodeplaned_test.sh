#!/bin/bash
# Runs the nodeplaned binary the way an operator would: --version,
# --check-config on good and bad files, and serving until SIGTERM.
# usage: nodeplaned_test.sh NODEPLANED SOURCE_DIR CASE
set -u
bin=$1 src=$2 case=$3
fail() { echo "FAIL: $*"; exit 1; }

case $case in
version)
  out=$("$bin" --version) || fail "--version exited $?"
  grep -q '^nodeplaned [0-9]' <<<"$out" || fail "no version line in: $out"
  grep -q '^plugin ABI 1\.\.1$' <<<"$out" || fail "no ABI range in: $out"
  ;;
check-default)
  out=$("$bin" --check-config --config "$src/config/nodeplane.toml" 2>&1) || fail "default config refused: $out"
  grep -q ': ok' <<<"$out" || fail "unexpected output: $out"
  ;;
check-examples)
  for f in "$src"/config/examples/*.toml; do
    out=$("$bin" --check-config --config "$f" 2>&1) || fail "$f refused: $out"
  done
  ;;
check-typo)
  out=$("$bin" --check-config --config "$src/tests/cli/typo.toml" 2>&1) && fail "a typo was accepted"
  grep -qF "typo.toml:6:1: wire.poll_windw: unknown key; did you mean \"poll_window\"?" <<<"$out" \
    || fail "message lacks file:line and suggestion: $out"
  ;;
bad-args)
  "$bin" --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown argument did not exit 2"
  "$bin" >/dev/null 2>&1; [ $? -eq 2 ] || fail "missing --config did not exit 2"
  ;;
serve)
  dir=$(mktemp -d)
  trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
  "$bin" --config "$src/tests/cli/serve.toml" --state-dir "$dir/state" 2>"$dir/log" &
  pid=$!
  url=
  for _ in $(seq 1 200); do   # bounded wait for the log line, not a pacing sleep
    url=$(sed -n 's/.*event=host.healthy url=\([^ ]*\).*/\1/p' "$dir/log")
    [ -n "$url" ] && break
    kill -0 $pid 2>/dev/null || fail "nodeplaned exited: $(cat "$dir/log")"
    sleep 0.05
  done
  [ -n "$url" ] || fail "no host.healthy line: $(cat "$dir/log")"
  body=$(curl -fsS "$url") || fail "health request failed"
  [ "$body" = '{"status":"ok","deployment":"clitest"}' ] || fail "health body: $body"
  [ "$(stat -c %a "$dir/state")" = 700 ] || fail "state dir mode $(stat -c %a "$dir/state")"
  kill -TERM $pid
  wait $pid; rc=$?
  [ $rc -eq 0 ] || fail "exit code $rc after SIGTERM"
  grep -q 'event=host.stopped' "$dir/log" || fail "no host.stopped line: $(cat "$dir/log")"
  ;;
*)
  fail "unknown case $case"
  ;;
esac
echo "ok: $case"
