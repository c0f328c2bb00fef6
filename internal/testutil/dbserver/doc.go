// Package dbserver starts throwaway database servers, PostgreSQL and MariaDB, for the
// tests of the scripts Mooring's Jobs run (package dump's backup, restore and cleanup,
// package database's credentials change), so that those scripts are proven against the
// real server and its real clients rather than against stand-ins. Each server is Debian's
// binaries started in a temporary directory on a free local port, owned by one test and
// stopped when it ends. Only tests import it.
//
// It also finds the servers for the tests that run them otherwise (the instance
// manager's): where Debian installs them, /usr/lib/postgresql/<major>/bin and
// /usr/sbin/mariadbd, as the manager looks in a Debian-based image, and on PATH only
// after that. The packages that use it call UsePath in their TestMain, and `make test`
// runs them with a plain Debian machine's PATH (PathEnv), so no test relies on a server
// being on PATH.
package dbserver
