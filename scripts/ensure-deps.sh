#!/usr/bin/env bash
# Installs npm packages when node_modules is missing or older than the lock file, and the pinned
# opa (scripts/install-tools.sh is a no-op when it is already in place). With --with-test-node (the
# test command), also regal, which only the policy lint uses, and the pinned Node LTS of
# tools/node/package.json, which the test command runs the suite on beside the machine's Node (the
# `node` package ships the binary from the npm registry; it stays in tools/node/node_modules, off
# the PATH of every npm script).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi
if [[ "${1:-}" == "--with-test-node" ]]; then
  bash scripts/install-tools.sh opa regal
else
  bash scripts/install-tools.sh opa
fi
if [[ "${1:-}" == "--with-test-node" ]]; then
  stamp=tools/node/node_modules/.installed
  want=$(sha256sum tools/node/package.json tools/node/package-lock.json | sha256sum | cut -c1-16)
  if [[ ! -x tools/node/node_modules/.bin/node || ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "installing the pinned Node of tools/node/package.json ..." >&2
    npm ci --prefix tools/node --no-audit --no-fund
    echo "$want" > "$stamp"
  fi
fi
