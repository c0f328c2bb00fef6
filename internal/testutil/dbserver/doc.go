// Package dbserver starts throwaway database servers, PostgreSQL and MariaDB, for the
// tests of the scripts Mooring's Jobs run (package dump's backup, restore and cleanup,
// package database's credentials change), so that those scripts are proven against the
// real server and its real clients rather than against stand-ins. Each server is Debian's
// binaries started in a temporary directory on a free local port, owned by one test and
// stopped when it ends. Only tests import it.
package dbserver
