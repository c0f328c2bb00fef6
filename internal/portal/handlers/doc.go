// Package handlers is the portal's HTTP edge: each handler binds and checks its input,
// calls a service and writes JSON. Errors, wherever they come from, leave as
// {"error": {"code", "message", "fields"}} (errors.go).
package handlers
