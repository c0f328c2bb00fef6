// Package portal is the Mooring portal: a self-service REST API (cmd/mooring-portal)
// where people register, log in and manage Mooring resources. What a user may do in the
// cluster is decided by the API server's RBAC: every cluster call made for a user
// impersonates an identity derived from the user's id and role.
//
// The layers, outside in: routes (paths to handlers), middleware (request id, logs,
// metrics, tracing, auth, rate limits, body limits), handlers (HTTP in and out only),
// services (what the portal does), store (where users live) and cluster (clients that
// act as the portal or as a user). models holds the JSON shapes of the API, which
// openapi describes.
package portal
