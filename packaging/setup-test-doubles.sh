#!/bin/bash
# Installs the GitHub test doubles from the npm registry into
# tests/github/node_modules, exactly as package-lock.json pins them: Prism
# (a mock server that validates requests against an OpenAPI description),
# @octokit/openapi (GitHub's own REST API descriptions) and jose (the
# independent JWT verifier the stateful fake uses). For tests only: nothing
# here is part of a build or a package. Idempotent: a matching install is
# left alone and the network is not touched.
set -euo pipefail
cd "$(dirname "$0")/../tests/github"
if ! command -v npm >/dev/null; then
  echo "setup-test-doubles: npm is missing; install Debian's nodejs and npm" >&2
  exit 1
fi
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ -d node_modules/jose ] && [ -x node_modules/.bin/prism ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  echo "setup-test-doubles: present"
  exit 0
fi
echo "setup-test-doubles: npm ci (Prism, @octokit/openapi, jose)"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
echo "setup-test-doubles: done"
