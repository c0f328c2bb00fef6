// Package dump is what Mooring's backup Jobs run: the shell scripts that dump a database
// into a volume, keep the newest dumps and clean them up (embedded, so the text the tests
// run against a real PostgreSQL server is the text the Jobs run), and the pure builders
// of the pod templates that run them. Backups (package controller/backup) and the final
// snapshot of a DatabaseCluster (package controller/database) share it.
package dump
