// Package store is where portal users live: User objects (portal.mooring.dev, cluster
// scoped, named after the lower-case username so the API server enforces uniqueness
// across replicas) and, for each, a Secret with the password hash in the portal's own
// namespace, which only the portal's ServiceAccount may read.
package store
