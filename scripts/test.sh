#!/usr/bin/env bash
# Every test: installs what it needs, builds (TypeScript and the policy module), runs the policy
# gates (opa test with coverage, opa check --strict, Regal) and then jest against the real
# Postgres and Redis, each run in a database of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
npm run --silent build
npm run --silent policy:check
npm run --silent policy:lint
npm run --silent policy:test
npx jest "$@"
