#!/usr/bin/env bash
# Fails when the committed deepcopy code, CRDs, RBAC or webhook configurations differ from what controller-gen
# makes of the current source: generate into a temporary directory and compare.
set -euo pipefail
cd "$(dirname "$0")/.."
cg=bin/k8s/controller-gen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

stale=0
"$cg" crd webhook paths=./... output:crd:dir="$tmp/crd" output:webhook:dir="$tmp/webhook"
"$cg" rbac:roleName=manager-role paths="$(hack/operator-rbac-paths.sh)" output:rbac:dir="$tmp/rbac"
"$cg" rbac:roleName=mooring-portal paths=./internal/portal/... output:rbac:dir="$tmp/portal-rbac"
diff "$tmp/portal-rbac/role.yaml" config/portal/rbac/role.yaml >/dev/null || { echo "stale: config/portal/rbac/role.yaml"; stale=1; }
diff -r "$tmp/crd" config/crd/bases >/dev/null || { echo "stale: config/crd/bases"; diff -r "$tmp/crd" config/crd/bases | head -20; stale=1; }
diff -r "$tmp/rbac" config/rbac --exclude=kustomization.yaml --exclude='*_binding.yaml' --exclude='*service_account.yaml' --exclude='leader_election*' --exclude='metrics_*' --exclude=user_roles.yaml >/dev/null \
  || { echo "stale: config/rbac/role.yaml"; diff "$tmp/rbac/role.yaml" config/rbac/role.yaml | head -20; stale=1; }
diff "$tmp/webhook/manifests.yaml" config/webhook/manifests.yaml >/dev/null || { echo "stale: config/webhook/manifests.yaml"; stale=1; }
for pkg in $(dirname $(find api -name zz_generated.deepcopy.go) | sed 's|$|/|'); do
  "$cg" object paths="./$pkg" output:object:dir="$tmp/obj/$pkg"
  diff "$tmp/obj/$pkg/zz_generated.deepcopy.go" "$pkg/zz_generated.deepcopy.go" >/dev/null \
    || { echo "stale: ${pkg}zz_generated.deepcopy.go"; stale=1; }
done
# The portal's OpenAPI document follows openapi.yaml and the CRDs, its Go client the document.
go run ./hack/openapi "$tmp/openapi.json"
diff "$tmp/openapi.json" internal/portal/openapi/zz_generated.openapi.json >/dev/null \
  || { echo "stale: internal/portal/openapi/zz_generated.openapi.json"; stale=1; }
grep -v '^output:' internal/portal/client/oapi-codegen.yaml >"$tmp/oapi-codegen.yaml" # to stdout
go -C hack/oapi-codegen tool oapi-codegen -config "$tmp/oapi-codegen.yaml" \
  ../../internal/portal/openapi/zz_generated.openapi.json >"$tmp/client.go"
diff "$tmp/client.go" internal/portal/client/zz_generated.client.go >/dev/null \
  || { echo "stale: internal/portal/client/zz_generated.client.go"; stale=1; }
if [ "$stale" = 1 ]; then
  echo "Generated files are stale: run 'make manifests' and commit the result." >&2
  exit 1
fi
