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
npm run --silent openapi
# Generated and committed: the JSON Schemas of the decision inputs, the WASM-native builtins of
# the pinned opa, the OpenAPI document and the SDK's types. What the build wrote must be committed.
generated=(policies/schemas tools/opa/capabilities.json clients/openapi.json clients/typescript/src/schema.d.ts)
if git rev-parse --git-dir >/dev/null 2>&1 && ! git diff --quiet -- "${generated[@]}"; then
  echo "generated files differ from what is committed (run npm run build && npm run openapi): commit them" >&2
  git --no-pager diff --stat -- "${generated[@]}" >&2
  exit 1
fi
npm run --silent lint
npm run --silent policy:check
npm run --silent policy:lint
npm run --silent policy:test
# The alert rules (promtool check and unit tests); installs Debian's prometheus for the scrape test too.
bash scripts/test-monitoring.sh
echo "== jest on the machine's Node $(node --version)"
npx jest "$@"
# The console in a real browser (Debian's Chromium), once: it tests the app, not the Node version.
echo "== the console in Chromium"
bash scripts/test-browser.sh
pinned=tools/node/node_modules/.bin/node
echo "== jest on the pinned Node $("$pinned" --version)"
"$pinned" node_modules/jest/bin/jest.js "$@"
