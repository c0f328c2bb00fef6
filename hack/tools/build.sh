#!/usr/bin/env bash
# Builds Mooring's pinned control-plane binaries once per machine and links them into
# bin/k8s/ of the checkout. The binaries live in a cache directory outside the checkout,
# keyed by a hash of this module's go.mod and go.sum, so a fresh clone on the same machine
# finds them at once. Binaries already present in $KUBEBUILDER_ASSETS are used as they are.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# Bump recipe when a change to this script changes what the binaries are (flags, ldflags).
recipe=2
cache_root=${MOORING_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mooring/tools}
# cache_dir prints the cache directory of the tools module in directory $1 (relative to
# hack/tools): one per module, keyed by that module's go.mod and go.sum.
cache_dir() {
  local key
  key=$( (cat "$here/$1/go.mod" "$here/$1/go.sum"; echo "recipe=$recipe") | sha256sum | cut -c1-12)
  echo "$cache_root/$key"
}
cache=$(cache_dir .)
out=$root/bin/k8s
k8s_version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
mkdir -p "$cache" "$out"

# Two builds at once (make test in two shells) would race on the same outputs; the
# second waits for the first and then finds everything built.
exec 9>"$cache/.lock"
if ! flock -n 9; then
  echo "tools: another build is running; waiting for it"
  flock 9
fi

# name:package[:module dir], in build order (the API server and etcd first: envtest needs
# only those). The next three run the local cluster's real node (internal/localcluster),
# each from a module of its own: node/ (the kubelet and kube-proxy, same Kubernetes pins,
# so adding them did not change the control plane's cache key) and coredns/ (whose
# dependencies must never move the Kubernetes pins here). hydra/ is the OpenID Connect
# provider the portal's single sign-on tests log in through (internal/portal/portaltest).
tools=(
  etcd:go.etcd.io/etcd/server/v3
  kube-apiserver:k8s.io/kubernetes/cmd/kube-apiserver
  controller-gen:sigs.k8s.io/controller-tools/cmd/controller-gen
  kubectl:k8s.io/kubernetes/cmd/kubectl
  kube-controller-manager:k8s.io/kubernetes/cmd/kube-controller-manager
  kube-scheduler:k8s.io/kubernetes/cmd/kube-scheduler
  kwok:sigs.k8s.io/kwok/cmd/kwok
  kubelet:k8s.io/kubernetes/cmd/kubelet:node
  kube-proxy:k8s.io/kubernetes/cmd/kube-proxy:node
  coredns:github.com/coredns/coredns:coredns
  hydra:github.com/ory/hydra/v2:hydra
)

for entry in "${tools[@]}"; do
  IFS=: read -r name pkg module <<<"$entry"
  module=${module:-.}
  cache=$(cache_dir "$module")
  mkdir -p "$cache"
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$name" ]; then
    ln -sfn "$KUBEBUILDER_ASSETS/$name" "$out/$name"
    continue
  fi
  if [ ! -x "$cache/$name" ]; then
    start=$(date +%s)
    echo "tools: building $name ($pkg) into $cache (not cached yet; a cold build of all tools takes ~13 min on 2 cores)"
    ldflags='-s -w'
    tags=''
    cgo=${CGO_ENABLED:-}
    case "$pkg" in
      # Hydra keeps its in-memory store (DSN=memory) in SQLite, which needs cgo and these
      # tags ("SQLite support was not built into the binary" without them).
      github.com/ory/hydra/*) tags='sqlite,sqlite_omit_load_extension' cgo=1 ;;
      # Stamp the Kubernetes version, which a build outside the kubernetes repository lacks
      # (kubectl version would fail against the v0.0.0-master default).
      k8s.io/kubernetes/*) ldflags="$ldflags -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$k8s_version" | cut -d. -f2)" ;;
    esac
    (cd "$here/$module" && CGO_ENABLED=$cgo go build -trimpath -tags="$tags" -ldflags="$ldflags" -o "$cache/$name.tmp.$$" "$pkg")
    mv "$cache/$name.tmp.$$" "$cache/$name"
    echo "tools: built $name in $(( $(date +%s) - start ))s"
  fi
  ln -sfn "$cache/$name" "$out/$name"
done

# kwok needs its Stage objects; they ship in its module, so record where that is.
(cd "$here" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok) > "$out/kwok-module-dir"
