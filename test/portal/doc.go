// Package portal tests the Mooring portal end to end: the operator and two portal
// replicas run as processes against a local cluster of their own, the portal under the
// RBAC of config/portal, and the tests act as users over real HTTP.
package portal
