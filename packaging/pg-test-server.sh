#!/bin/bash
# A throwaway PostgreSQL 15 server for the tests: initdb into a temporary
# directory, run as the unprivileged "postgres" user (PostgreSQL refuses
# root), listening on a Unix socket only.
#   pg-test-server.sh start   prints the libpq DSN of a ready server
#   pg-test-server.sh pause DIR     stops the server, keeping its data (a test of an outage)
#   pg-test-server.sh resume DIR    starts it again
#   pg-test-server.sh stop DIR
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
case ${1:-} in
start)
  d=$(mktemp -d /tmp/nodeplane-pg.XXXXXX)
  chmod 0755 "$d"
  as_pg=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$d"
    as_pg=(runuser -u postgres --)
  fi
  "${as_pg[@]}" "$bin/initdb" -D "$d/data" -A trust -U postgres >"$d/initdb.log" 2>&1
  "${as_pg[@]}" "$bin/pg_ctl" -D "$d/data" -w -o "-k $d -c listen_addresses='' -c max_connections=400 -c fsync=off" \
    -l "$d/log" start >/dev/null
  echo "host=$d user=postgres dbname=postgres"
  ;;
pause)
  d=$2
  as_pg=()
  [ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
  "${as_pg[@]}" "$bin/pg_ctl" -D "$d/data" -w -m fast stop >/dev/null
  ;;
resume)
  d=$2
  as_pg=()
  [ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
  "${as_pg[@]}" "$bin/pg_ctl" -D "$d/data" -w -o "-k $d -c listen_addresses='' -c max_connections=400 -c fsync=off" \
    -l "$d/log" start >/dev/null
  ;;
stop)
  d=$2
  as_pg=()
  [ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
  "${as_pg[@]}" "$bin/pg_ctl" -D "$d/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$d"
  ;;
*)
  echo "usage: pg-test-server.sh start | pause DIR | resume DIR | stop DIR" >&2
  exit 2
  ;;
esac
