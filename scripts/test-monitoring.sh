#!/usr/bin/env bash
# The alert rules and the dashboard's companions in deploy/: Debian's prometheus package (promtool,
# and the server test/operations/prometheus.test.ts starts), installed with apt when missing, never
# a download from elsewhere. `promtool check rules` validates the rules; `promtool test rules` runs
# each alert's firing and quiet cases.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x /usr/bin/promtool || ! -x /usr/bin/prometheus ]]; then
  echo "installing Debian's prometheus for the monitoring tests ..." >&2
  sudo=(); [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  # Wait for another apt run rather than fail; fetch the lists once if this machine never did.
  apt=("${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends prometheus)
  "${apt[@]}" >&2 || { "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update >&2 && "${apt[@]}" >&2; }
fi
promtool check rules deploy/prometheus/*.rules.yml
promtool test rules deploy/prometheus/tests/*.test.yml
