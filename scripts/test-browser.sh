#!/usr/bin/env bash
# The console in a real browser: Debian's Chromium, installed with apt when it is missing (never a
# browser download), driven by @playwright/test (playwright.config.ts). Needs `npm run build`.
set -euo pipefail
cd "$(dirname "$0")/.."
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  echo "installing Debian's chromium for the browser tests ..." >&2
  sudo=(); [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  # A machine whose package lists were never fetched knows no chromium yet: fetch them once then.
  "${sudo[@]}" apt-get install -y chromium >&2 || { "${sudo[@]}" apt-get update >&2 && "${sudo[@]}" apt-get install -y chromium >&2; }
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
exec npx playwright test "$@"
