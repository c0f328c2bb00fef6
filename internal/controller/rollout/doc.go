// Package rollout reads a Deployment's status the way `kubectl rollout status` does and
// turns it into what every Deployment-backed Mooring kind (App, CacheInstance) reports:
// a phase and the Ready and Progressing conditions. The decisions are ordered checks in
// rollout.go; the condition reasons are in reasons.go.
package rollout
