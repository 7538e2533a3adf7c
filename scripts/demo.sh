#!/usr/bin/env bash
# The first README command: install (npm packages and the pinned opa), build, migrate, seed a demo
# world (printing ready-to-use credentials and curl lines) and start the service in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
npm run --silent build
npm run --silent migrate
npm run --silent admin -- demo
# The console, signed in as the demo world's owner, with the agent's write waiting for approval.
echo
echo "Open the console (one use, valid 10 minutes; another: npm run admin -- console-link --as owner):"
echo "  $(npm run --silent admin -- console-link --as owner)"
echo
exec npm start
