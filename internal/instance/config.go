package instance

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Paths inside the database container; the pod template (internal/controller/database)
// mounts the volumes there.
const (
	// DataDir is the data volume's mount point. Each engine keeps its files in a
	// subdirectory, so that a volume's lost+found never sits in the server's directory.
	DataDir = "/var/lib/mooring/data"
	// RunDir is a per-pod emptyDir: sockets, the replication password file, temporary
	// clones.
	RunDir = "/run/mooring"
	// BinDir is the emptyDir the init container copies the manager into.
	BinDir = "/run/mooring-bin"
	// AdminSecretDir holds the superuser Secret's keys as files ("password").
	AdminSecretDir = "/etc/mooring/admin"
	// AppSecretDir holds the credentials Secret's keys as files ("username", "password").
	AppSecretDir = "/etc/mooring/app"
	// ClusterStateDir holds the keys of the cluster's state ConfigMap (<name>-state) as
	// files: what the cluster as a whole knows that a pod's own volume cannot (marker.go).
	ClusterStateDir = "/etc/mooring/cluster"
	// ReplicationSecretDir holds the replication Secret's "password": the replication
	// user's own, which no one outside the cluster's pods reads.
	ReplicationSecretDir = "/etc/mooring/replication"
	// TLSDir holds the server certificate Secret's tls.crt, tls.key and ca.crt.
	TLSDir = "/etc/mooring/tls"
	// ClientCADir holds the cluster CA's ca.crt, which signs the client certificates
	// the superuser may log in with over the network.
	ClientCADir = "/etc/mooring/client-ca"
	// StatusPort serves /healthz, /readyz and /status.
	StatusPort = 8008
	// ReplicationUser is the user replicas connect (and, on MariaDB and MySQL, copy the
	// primary) as.
	ReplicationUser = "replicator"
)

// Roles an instance has.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
)

// Config is what one instance is told by its pod.
type Config struct {
	// Engine is "postgresql", "mysql" or "mariadb"; Version is spec.version.
	Engine, Version string
	// Pod is the pod's name; Index its ordinal in the StatefulSet (0 is the primary).
	Pod   string
	Index int
	// PrimaryHost is the primary's stable DNS name (through the headless Service).
	PrimaryHost string
	// Port the server listens on; PrimaryPort the primary's, the same in a cluster.
	Port, PrimaryPort int
	// DataDir, RunDir and the Secret directories default to the constants above; tests
	// point them elsewhere.
	DataDir, RunDir, AdminSecretDir, AppSecretDir, ClusterStateDir string
	// MemoryLimit is the database container's memory limit in bytes (0: none); the
	// server's memory settings are derived from it (memory.go).
	MemoryLimit int64
	// ReplicationSecretDir is the replication Secret's; empty, the replication user has
	// the admin password (pods of before the replication Secret).
	ReplicationSecretDir string
	// TLSDir has the server's certificate, key and the CA clients verify it with; empty,
	// the server offers no TLS and takes plaintext (the instance tests of the other
	// features). ClientCADir has the CA of the superuser's client certificates; empty,
	// TLSDir's ca.crt.
	TLSDir, ClientCADir string
	// SuperuserAccess lets the superuser log in over the network with its password, as
	// spec.superuserAccess asks; without it the superuser logs in over the local socket,
	// or over TLS with a client certificate of the cluster's CA.
	SuperuserAccess bool
	// StatusAddr is where the status server listens (":8008").
	StatusAddr string
}

// Role is the instance's role, from its index.
func (c Config) Role() string {
	if c.Index == 0 {
		return RolePrimary
	}
	return RoleReplica
}

// secret reads one key of a mounted Secret. The kubelet writes the key's bytes as they
// are; a trailing newline would be part of the password, as it is of the Secret.
func (c Config) secret(dir, key string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, key))
	if err != nil {
		return "", fmt.Errorf("read %s of the mounted Secret: %w", key, err)
	}
	if len(b) == 0 {
		return "", fmt.Errorf("key %s of the mounted Secret is empty", key)
	}
	return string(b), nil
}

// AdminPassword is the superuser's (and the replication user's) password.
func (c Config) AdminPassword() (string, error) { return c.secret(c.AdminSecretDir, "password") }

// ReplicationPassword is the replication user's password.
func (c Config) ReplicationPassword() (string, error) {
	if c.ReplicationSecretDir == "" {
		return c.AdminPassword()
	}
	return c.secret(c.ReplicationSecretDir, "password")
}

// TLS reports whether the server offers TLS and refuses plaintext TCP.
func (c Config) TLS() bool { return c.TLSDir != "" }

// AppCredentials are the application user's name and first password.
func (c Config) AppCredentials() (user, password string, err error) {
	if user, err = c.secret(c.AppSecretDir, "username"); err != nil {
		return "", "", err
	}
	password, err = c.secret(c.AppSecretDir, "password")
	return user, password, err
}

// ParseConfig reads the flags of `mooring instance run`; the pod's name and index may
// also come from POD_NAME and POD_INDEX (the downward API).
func ParseConfig(args []string) (Config, error) {
	c := Config{DataDir: DataDir, RunDir: RunDir, AdminSecretDir: AdminSecretDir, AppSecretDir: AppSecretDir, ClusterStateDir: ClusterStateDir}
	fs := flag.NewFlagSet("instance run", flag.ContinueOnError)
	fs.StringVar(&c.Engine, "engine", "", "postgresql, mysql or mariadb")
	fs.StringVar(&c.Version, "version", "", "the cluster's spec.version")
	fs.StringVar(&c.Pod, "pod", os.Getenv("POD_NAME"), "this pod's name")
	index := fs.String("index", os.Getenv("POD_INDEX"), "this pod's index in the StatefulSet")
	fs.StringVar(&c.PrimaryHost, "primary-host", "", "the primary's DNS name")
	fs.IntVar(&c.Port, "port", 0, "port the server listens on")
	fs.IntVar(&c.PrimaryPort, "primary-port", 0, "the primary's port; --port when unset")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "the data volume")
	fs.StringVar(&c.RunDir, "run-dir", c.RunDir, "a private writable directory")
	fs.StringVar(&c.AdminSecretDir, "admin-secret-dir", c.AdminSecretDir, "the superuser Secret's files")
	fs.StringVar(&c.AppSecretDir, "app-secret-dir", c.AppSecretDir, "the credentials Secret's files")
	fs.StringVar(&c.ClusterStateDir, "cluster-state-dir", c.ClusterStateDir, "the cluster's state ConfigMap's files")
	fs.Int64Var(&c.MemoryLimit, "memory-limit", 0, "the container's memory limit in bytes; 0 for none")
	fs.StringVar(&c.ReplicationSecretDir, "replication-secret-dir", "", "the replication Secret's files; empty: the admin password")
	fs.StringVar(&c.TLSDir, "tls-dir", "", "the server certificate's tls.crt, tls.key and ca.crt; empty: no TLS")
	fs.StringVar(&c.ClientCADir, "client-ca-dir", "", "ca.crt of the superuser's client certificates; empty: --tls-dir's")
	fs.BoolVar(&c.SuperuserAccess, "superuser-access", false, "let the superuser log in over the network with its password")
	fs.StringVar(&c.StatusAddr, "status-address", ":"+strconv.Itoa(StatusPort), "address of /healthz, /readyz and /status")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.PrimaryPort == 0 {
		c.PrimaryPort = c.Port
	}
	var errs []error
	i, err := strconv.Atoi(strings.TrimSpace(*index))
	if err != nil || i < 0 {
		errs = append(errs, fmt.Errorf("--index (or POD_INDEX) %q is not a pod index", *index))
	}
	c.Index = i
	if c.Engine == "" || c.Version == "" || c.Pod == "" || c.Port == 0 {
		errs = append(errs, errors.New("--engine, --version, --pod (or POD_NAME) and --port are required"))
	}
	if c.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("--memory-limit %d is negative", c.MemoryLimit))
	}
	if c.Index > 0 && c.PrimaryHost == "" {
		errs = append(errs, errors.New("--primary-host is required on a replica"))
	}
	return c, errors.Join(errs...)
}
