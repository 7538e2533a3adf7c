#!/usr/bin/env bash
# Installs npm packages when node_modules is missing or older than the lock file, and the pinned
# Rego toolchain (scripts/install-tools.sh is a no-op when it is already in place).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi
bash scripts/install-tools.sh
