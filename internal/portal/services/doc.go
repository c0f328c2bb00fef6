// Package services is what the portal does, free of HTTP: accounts and sessions
// (users.go, sessions.go), RBAC bindings kept in step with roles (bindings.go), access
// decisions asked of the API server (authz.go) and Mooring resources handled as the
// user (resources.go).
package services
