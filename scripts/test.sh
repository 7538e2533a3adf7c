#!/usr/bin/env bash
# Every test: installs what it needs, builds (TypeScript and the policy module), runs the policy
# gates (opa test with coverage, opa check --strict, Regal) and then jest against the real
# Postgres and Redis, each run in a database of its own: once on the machine's Node and once on
# the pinned supported LTS (tools/node/package.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh --with-test-node
npm run --silent build
# The build writes the JSON Schemas of the decision inputs; committed ones must be the same.
if git rev-parse --git-dir >/dev/null 2>&1 && ! git diff --quiet -- policies/schemas; then
  echo "policies/schemas differ from the decision catalogue: commit what the build wrote" >&2
  git --no-pager diff --stat -- policies/schemas >&2
  exit 1
fi
npm run --silent policy:check
npm run --silent policy:lint
npm run --silent policy:test
echo "== jest on the machine's Node $(node --version)"
npx jest "$@"
pinned=tools/node/node_modules/.bin/node
echo "== jest on the pinned Node $("$pinned" --version)"
"$pinned" node_modules/jest/bin/jest.js "$@"
