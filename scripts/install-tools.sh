#!/usr/bin/env bash
# Installs the pinned Rego tools named (default: opa alone; the tests' policy lint adds regal) into
# .tools/bin from the Go module proxy. Versions live in tools/*/go.mod (tool directives); nothing
# is downloaded as a release binary. The service and the demo need opa only: building regal takes
# minutes, and only the tests use it.
set -euo pipefail
# Container builds copy a prebuilt opa into .tools/bin from their own Go stage.
[[ -n "${TOOLS_PREINSTALLED:-}" ]] && exit 0
root=$(cd "$(dirname "$0")/.." && pwd)
# Go's usual home, for shells (CI, cron) whose PATH lacks it.
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
bin="$root/.tools/bin"
mkdir -p "$bin"
tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(opa)
for tool in "${tools[@]}"; do
  [[ -f "$root/tools/$tool/go.mod" ]] || { echo "install-tools.sh: no tools/$tool/go.mod" >&2; exit 2; }
  stamp="$bin/.$tool.stamp"
  want=$(cat "$root/tools/$tool/go.mod" "$root/tools/$tool/go.sum" | sha256sum | cut -c1-16)
  if [[ -x "$bin/$tool" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    continue
  fi
  echo "installing $tool from tools/$tool/go.mod ..." >&2
  (cd "$root/tools/$tool" && GOBIN="$bin" GOFLAGS=-mod=mod go install tool)
  echo "$want" > "$stamp"
done
