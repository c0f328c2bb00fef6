#!/usr/bin/env bash
# Builds golangci-lint from this pinned module once per machine and links it into bin/.
# The binary lives outside the checkout, keyed by a hash of this module's go.mod and go.sum
# (as hack/tools/build.sh does for the control plane), so a fresh clone finds it at once.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
key=$( (cat "$here/go.mod" "$here/go.sum" "$here/main.go") | sha256sum | cut -c1-12)
cache=${MOORING_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mooring/tools}/lint-$key
mkdir -p "$cache" "$root/bin"

exec 9>"$cache/.lock"
if ! flock -n 9; then
  echo "lint: another build is running; waiting for it"
  flock 9
fi
if [ ! -x "$cache/golangci-lint" ]; then
  start=$(date +%s)
  echo "lint: building golangci-lint into $cache (once per machine; ~1-3 min)"
  (cd "$here" && go build -trimpath -ldflags='-s -w' -o "$cache/golangci-lint.tmp.$$" .)
  mv "$cache/golangci-lint.tmp.$$" "$cache/golangci-lint"
  echo "lint: built golangci-lint in $(( $(date +%s) - start ))s"
fi
ln -sfn "$cache/golangci-lint" "$root/bin/golangci-lint"
