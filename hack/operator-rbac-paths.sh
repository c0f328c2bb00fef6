#!/usr/bin/env bash
# Prints the controller-gen paths argument for the operator's ClusterRole: every package
# but the portal's, whose +kubebuilder:rbac markers make the portal's own role
# (config/portal/rbac) and must never widen the operator's.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
pkgs=$(go list ./... | grep -v -e "^$mod/internal/portal" -e "^$mod/cmd/mooring-portal" | sed "s|^$mod|.|" | paste -sd, -)
echo "{$pkgs}"
