// Package instance is Mooring's instance manager: the first process of every database
// container, in the manner of CloudNativePG's. It ships inside the operator's image (the
// `mooring instance` subcommand), is copied into the pod by an init container, and runs
// the database server itself, so that any image carrying the server's binaries works the
// same: the official postgres, mysql and mariadb images, or images built from Debian's
// packages.
//
// At every start it checks the image and the data directory, initialises the directory
// when it is empty (initdb or mariadb-install-db on the primary; a clone of the primary
// on a replica), writes the configuration Mooring owns, starts the server as its child
// and, once the server answers, makes sure of the users and of replication. It serves
// /healthz, /readyz and /status (role, position, faults) on StatusPort, which the
// probes and the operator read; /status only with the cluster's bearer token
// (statusauth.go). An empty data directory in a cluster that has data, as the mounted
// state ConfigMap says, is never initialised: a replica copies the primary and the
// primary waits (marker.go). As the container's PID 1 it reaps orphaned processes
// (reaper.go) and passes SIGHUP, SIGUSR1 and SIGUSR2 on to the server (signals.go); the
// server's memory settings follow the container's memory limit (memory.go). A fault it can name (an image without the server, a
// data directory of another major version, a full volume) keeps the manager up and the
// server down, with the cause in /status, so the pod neither crash-loops without a
// message nor has its data directory touched.
//
// Role: pod 0 of the StatefulSet is the primary, every other pod a replica of it. There
// is no failover: the role comes from the pod's index.
package instance
