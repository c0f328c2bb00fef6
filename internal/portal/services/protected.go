package services

import (
	"slices"
	"strings"
)

// Protected are the namespaces the portal never grants: a developer with Apps there
// could read its Secrets through them (the portal's signing keys, the operator's
// webhook certificate, the cluster's own components).
type Protected struct {
	// Portal are the portal's own namespaces (its Secrets, its users' identities).
	Portal []string
	// Operator is the Mooring operator's namespace.
	Operator string
	// Listed are the namespaces an operator of the portal added (--protected-namespaces).
	Listed []string
}

// Why says why ns is protected ("" when it is not).
func (p Protected) Why(ns string) string {
	switch {
	case slices.Contains(p.Portal, ns):
		return "the portal's own namespace"
	case p.Operator != "" && ns == p.Operator:
		return "the Mooring operator's namespace"
	case strings.HasPrefix(ns, "kube-"):
		return "a Kubernetes system namespace"
	case slices.Contains(p.Listed, ns):
		return "listed in --protected-namespaces"
	}
	return ""
}
