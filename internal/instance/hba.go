package instance

import (
	"strings"
)

// pgHBA is PostgreSQL's pg_hba.conf, checked top to bottom, first match wins:
//   - over the private socket (RunDir, 0700: only the pod's own user reaches it) anyone
//     is trusted, as the manager logs in as the superuser there;
//   - with TLS, every plaintext TCP connection is refused, before any password is sent;
//   - the superuser over the network only with a client certificate of the cluster's CA
//     whose common name is its name, unless superuserAccess also allows its password;
//   - the replication user only for replication, with its own password;
//   - everyone else with a SCRAM password.
func pgHBA(tls, superuserAccess bool) string {
	host := "host"
	if tls {
		host = "hostssl"
	}
	lines := []string{
		"# Written by Mooring at every start.",
		"local all all trust",
	}
	if tls {
		lines = append(lines, "hostnossl all all all reject")
	}
	switch {
	case superuserAccess:
		lines = append(lines, host+" all "+pgSuperuser+" all scram-sha-256")
	case tls:
		lines = append(lines, host+" all "+pgSuperuser+" all cert")
	default:
		lines = append(lines, host+" all "+pgSuperuser+" all reject")
	}
	lines = append(lines,
		host+" replication "+ReplicationUser+" all scram-sha-256",
		host+" all "+ReplicationUser+" all reject",
		host+" all all all scram-sha-256",
	)
	return strings.Join(lines, "\n") + "\n"
}

// pgTLSConf are the settings of PostgreSQL's TLS: the server's certificate, the CA of
// client certificates, TLS 1.2 at least. A reload (SIGHUP, pg_reload_conf) reads new
// files without a restart.
func pgTLSConf(f tlsFiles) []string {
	return []string{
		"ssl = on",
		"ssl_cert_file = '" + f.cert + "'",
		"ssl_key_file = '" + f.key + "'",
		"ssl_ca_file = '" + f.clientCA + "'",
		"ssl_min_protocol_version = 'TLSv1.2'",
	}
}

// pgSSLParams are the libpq parameters of Mooring's own connections to the primary:
// with TLS, verify-full against the cluster's CA.
func pgSSLParams(c Config) string {
	if !c.TLS() {
		return "sslmode=prefer"
	}
	return "sslmode=verify-full sslrootcert=" + c.tlsFiles().ca
}
