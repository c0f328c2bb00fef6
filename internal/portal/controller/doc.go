// Package controller holds the portal's one controller: it keeps every user's
// RoleBindings and ClusterRoleBindings equal to what the user's role and namespaces
// call for, whoever changed them (a hand-deleted binding comes back, a hand-made one
// under a user's label goes, a deleted User's bindings go). It runs in the portal, the
// one component that owns Users, the role names and the permission to bind them; among
// replicas one leader reconciles.
package controller
