package instance

import (
	"fmt"
	"slices"
)

// users is what one instance's users are to be, from the mounted Secrets.
type users struct {
	admin, replication, appUser, appPassword string
	// appExists: the application user exists already (its password is set, not its
	// database and rights).
	appExists bool
	// superuserAccess lets root log in over the network with its password; tls makes
	// every network account require TLS and lets root in with a client certificate.
	superuserAccess, tls bool
}

// superuserSubject is the subject of the client certificate root may log in with over
// the network without spec.superuserAccess, as MariaDB and MySQL print a certificate's
// subject; the cluster's CA (ssl_ca) must have signed it.
const superuserSubject = "/O=mooring.dev/CN=" + mysqlRoot

// replicationGrants are the replication user's rights: to stream the binary log, and to
// take the copy of the primary a new replica starts from (the dump tool's consistent
// snapshot of every database, with its GTID position).
func (d *dialect) replicationGrants() string {
	monitor := "BINLOG MONITOR"
	if d.mysql {
		monitor = "REPLICATION CLIENT"
	}
	return "REPLICATION SLAVE, " + monitor + ", SELECT, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, RELOAD"
}

// usersSetup is an instance's users as statements, all kept out of the binary log
// (sql_log_bin = 0): a password there stays readable for the log's week on every
// instance (mariadb-binlog prints it), and each instance sets its own users from the same
// Secrets instead. The general log is off for the session, and an error names a
// statement without its password.
func (d *dialect) usersSetup(u users) script {
	s := append(slices.Clone(quietSession), noBinlog)
	withPassword := func(format, acct, password string) stmt {
		return stmt{sql: fmt.Sprintf(format, acct, sqlLiteral(password)), shown: fmt.Sprintf(format, acct, "'…'")}
	}
	requireSSL := func(acct string) stmt {
		if u.tls {
			return stmt{sql: "ALTER USER " + acct + " REQUIRE SSL;"}
		}
		return stmt{sql: "ALTER USER " + acct + " REQUIRE NONE;"}
	}
	if d.mysql {
		// The local administrator's: the manager reads it from the admin option file.
		s = append(s, withPassword("ALTER USER %s IDENTIFIED BY %s;", account(mysqlRoot, "localhost"), u.admin))
	}
	root := account(mysqlRoot, "%")
	switch {
	case u.superuserAccess:
		s = append(s,
			withPassword("CREATE USER IF NOT EXISTS %s IDENTIFIED BY %s;", root, u.admin),
			withPassword("ALTER USER %s IDENTIFIED BY %s;", root, u.admin),
			requireSSL(root))
	case u.tls:
		// Mooring's own Jobs only: a client certificate of the cluster's CA named root,
		// and the password.
		s = append(s,
			withPassword("CREATE USER IF NOT EXISTS %s IDENTIFIED BY %s;", root, u.admin),
			withPassword("ALTER USER %s IDENTIFIED BY %s;", root, u.admin),
			stmt{sql: "ALTER USER " + root + " REQUIRE SUBJECT " + sqlLiteral(superuserSubject) + ";"})
	default:
		s = append(s, stmt{sql: "DROP USER IF EXISTS " + root + ";"})
	}
	if u.superuserAccess || u.tls {
		s = append(s, stmt{sql: "GRANT ALL PRIVILEGES ON *.* TO " + root + " WITH GRANT OPTION;"})
	}
	repl := account(ReplicationUser, "%")
	s = append(s,
		withPassword("CREATE USER IF NOT EXISTS %s IDENTIFIED BY %s;", repl, u.replication),
		withPassword("ALTER USER %s IDENTIFIED BY %s;", repl, u.replication),
		requireSSL(repl),
		stmt{sql: "GRANT " + d.replicationGrants() + " ON *.* TO " + repl + ";"})
	app := account(u.appUser, "%")
	if u.appExists {
		s = append(s, withPassword("ALTER USER %s IDENTIFIED BY %s;", app, u.appPassword))
	} else {
		s = append(s,
			withPassword("CREATE USER %s IDENTIFIED BY %s;", app, u.appPassword),
			stmt{sql: "CREATE DATABASE IF NOT EXISTS " + sqlIdent(MySQLAppDatabase) + ";"},
			stmt{sql: "GRANT ALL PRIVILEGES ON " + sqlIdent(MySQLAppDatabase) + ".* TO " + app + ";"})
	}
	return s
}

// replicationSource is where a replica replicates from; ca, when set, is the CA the
// primary's certificate is verified with (TLS, and the primary's name checked).
type replicationSource struct {
	host     string
	port     int
	password string
	ca       string
}

// changeSource points replication at the primary by GTID, as the replication user, and
// (start) starts it. MariaDB follows its gtid_slave_pos, which the copy set; MySQL its
// gtid_executed (the copy's GTID_PURGED).
func (d *dialect) changeSource(src replicationSource, start bool) script {
	s := append(slices.Clone(quietSession), noBinlog, stmt{sql: "STOP REPLICA;"})
	var f, tls string
	if d.mysql {
		f = "CHANGE REPLICATION SOURCE TO SOURCE_HOST = %s, SOURCE_PORT = %d, SOURCE_USER = %s, SOURCE_PASSWORD = %s, SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 5, GET_SOURCE_PUBLIC_KEY = 1%s;"
		if src.ca != "" {
			tls = ", SOURCE_SSL = 1, SOURCE_SSL_CA = " + sqlLiteral(src.ca) + ", SOURCE_SSL_VERIFY_SERVER_CERT = 1"
		}
	} else {
		f = "CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %d, MASTER_USER = %s, MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 5%s;"
		if src.ca != "" {
			tls = ", MASTER_SSL = 1, MASTER_SSL_CA = " + sqlLiteral(src.ca) + ", MASTER_SSL_VERIFY_SERVER_CERT = 1"
		}
	}
	change := fmt.Sprintf(f, sqlLiteral(src.host), src.port, sqlLiteral(ReplicationUser), sqlLiteral(src.password), tls)
	shown := fmt.Sprintf(f, sqlLiteral(src.host), src.port, sqlLiteral(ReplicationUser), "'…'", tls)
	s = append(s, stmt{sql: change, shown: shown})
	if start {
		s = append(s, stmt{sql: "START REPLICA;"})
	}
	return s
}

// mysqlTLSConf are the server's TLS settings: its certificate, the CA of client
// certificates, TLS 1.2 at least, and no plaintext TCP (the local socket counts as
// secure). The server reads new files on FLUSH SSL (MariaDB) or ALTER INSTANCE RELOAD
// TLS (MySQL), without a restart.
func mysqlTLSConf(f tlsFiles) []string {
	return []string{
		"ssl_cert = " + f.cert,
		"ssl_key = " + f.key,
		"ssl_ca = " + f.clientCA,
		"tls_version = TLSv1.2,TLSv1.3",
		"require_secure_transport = ON",
	}
}

// clientTLS are the client options of a connection to the primary: TLS, the primary's
// certificate verified against the cluster's CA and its name checked.
func (d *dialect) clientTLS(c Config) map[string]string {
	if !c.TLS() {
		return nil
	}
	if d.mysql {
		return map[string]string{"ssl-ca": c.tlsFiles().ca, "ssl-mode": "VERIFY_IDENTITY"}
	}
	return map[string]string{"ssl-ca": c.tlsFiles().ca, "ssl-verify-server-cert": "1"}
}
