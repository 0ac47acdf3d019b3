#!/bin/bash
# The ledger conformance suite against ledger-postgres, each test in a fresh
# schema of the test server named by NODEPLANE_TEST_PG_DSN (run-tests.sh
# starts one with packaging/pg-test-server.sh). Skipped (77) without it.
# usage: postgres_conformance.sh LEDGER_CONFORMANCE PLUGIN
[ -n "${NODEPLANE_TEST_PG_DSN:-}" ] || { echo "NODEPLANE_TEST_PG_DSN is not set: skipped"; exit 77; }
exec "$1" --plugin "$2" --config "{\"dsn\": \"$NODEPLANE_TEST_PG_DSN\", \"schema\": \"{test}\"}" --gtest_brief=1
