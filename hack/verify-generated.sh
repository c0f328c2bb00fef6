#!/usr/bin/env bash
# Fails when the committed deepcopy code, CRDs, RBAC or webhook configurations differ from what controller-gen
# makes of the current source: generate into a temporary directory and compare.
set -euo pipefail
cd "$(dirname "$0")/.."
cg=bin/k8s/controller-gen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$cg" crd rbac:roleName=manager-role webhook paths=./... output:crd:dir="$tmp/crd" output:rbac:dir="$tmp/rbac" output:webhook:dir="$tmp/webhook"
stale=0
diff -r "$tmp/crd" config/crd/bases >/dev/null || { echo "stale: config/crd/bases"; diff -r "$tmp/crd" config/crd/bases | head -20; stale=1; }
diff -r "$tmp/rbac" config/rbac --exclude=kustomization.yaml --exclude='*_binding.yaml' --exclude='*service_account.yaml' --exclude='leader_election*' --exclude='metrics_*' --exclude=user_roles.yaml >/dev/null \
  || { echo "stale: config/rbac/role.yaml"; diff "$tmp/rbac/role.yaml" config/rbac/role.yaml | head -20; stale=1; }
diff "$tmp/webhook/manifests.yaml" config/webhook/manifests.yaml >/dev/null || { echo "stale: config/webhook/manifests.yaml"; stale=1; }
for pkg in api/*/; do
  "$cg" object paths="./$pkg" output:object:dir="$tmp/obj/$pkg"
  diff "$tmp/obj/$pkg/zz_generated.deepcopy.go" "$pkg/zz_generated.deepcopy.go" >/dev/null \
    || { echo "stale: ${pkg}zz_generated.deepcopy.go"; stale=1; }
done
if [ "$stale" = 1 ]; then
  echo "Generated files are stale: run 'make manifests' and commit the result." >&2
  exit 1
fi
