package instance

import (
	"fmt"
	"slices"
	"strings"
)

// Names the application user may not have: the engines' own accounts and Mooring's. The
// admission webhook refuses them first (internal/webhook); the manager checks again, as
// the credentials Secret can change after admission.
var (
	pgReserved    = []string{pgSuperuser, ReplicationUser}
	mysqlReserved = []string{mysqlRoot, ReplicationUser, "mysql", "mariadb.sys", "PUBLIC"}
)

// ReservedUser reports whether name may not be an application user of engine: one of
// the engine's reserved names, or (MariaDB and MySQL) a name of the mysql.* system
// accounts. PostgreSQL's pg_* role names are reserved by the server itself.
func ReservedUser(engine, name string) bool {
	if engine == "postgresql" {
		return slices.Contains(pgReserved, name) || strings.HasPrefix(name, "pg_")
	}
	return slices.ContainsFunc(mysqlReserved, func(r string) bool { return strings.EqualFold(r, name) }) ||
		strings.HasPrefix(strings.ToLower(name), "mysql.")
}

// refuseReserved is the manager's refusal of a reserved application user: the instance
// is not ready, and /status says why, until the Secret names another user.
func refuseReserved(engine, user string) error {
	if ReservedUser(engine, user) {
		return fmt.Errorf("the credentials Secret's username %q is reserved for the database's own accounts; Mooring does not give it to the application: use another user name", user)
	}
	return nil
}
