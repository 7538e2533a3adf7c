#!/usr/bin/env bash
# Every test: installs what it needs, builds (TypeScript and the policy module), lints (ESLint,
# Prettier, the layering of src/), runs the policy gates (opa test with coverage, opa check
# --strict --schema, Regal) and then jest (its unit and integration tiers) against the real
# Postgres and Redis, each run in a database of its own: once on the machine's Node and once on
# the pinned supported LTS (tools/node/package.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh --with-test-node
npm run --silent build
node scripts/gen-capabilities.mjs
# The build writes the JSON Schemas of the decision inputs and the probe writes the WASM-native
# builtins of the pinned opa; committed ones must be the same.
if git rev-parse --git-dir >/dev/null 2>&1 && ! git diff --quiet -- policies/schemas tools/opa/capabilities.json; then
  echo "policies/schemas or tools/opa/capabilities.json differ from what the build wrote: commit them" >&2
  git --no-pager diff --stat -- policies/schemas tools/opa/capabilities.json >&2
  exit 1
fi
npm run --silent lint
npm run --silent policy:check
npm run --silent policy:lint
npm run --silent policy:test
echo "== jest on the machine's Node $(node --version)"
npx jest "$@"
pinned=tools/node/node_modules/.bin/node
echo "== jest on the pinned Node $("$pinned" --version)"
"$pinned" node_modules/jest/bin/jest.js "$@"
