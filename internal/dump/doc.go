// Package dump is what Mooring's backup and restore Jobs run: the shell scripts that dump
// a database into a volume, keep the newest dumps, clean them up and load one back into a
// database (embedded, so the text the tests run against real PostgreSQL and MariaDB
// servers is the text the Jobs run), and the pure builders of the pods that run them.
// Backups (package controller/backup), the final snapshot of a DatabaseCluster and the
// credentials Job (package controller/database) share it.
//
// It is also the one place the database images are chosen (Images, ServerImage): a
// cluster's server and every Job that talks to it run the same image at the same tag,
// spec.version, because the clients that match a server are the ones shipped with it.
package dump
