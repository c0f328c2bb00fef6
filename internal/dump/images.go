package dump

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/distribution/reference"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// The images Mooring runs unless the operator is told otherwise (cmd/mooring's
// --image-registry and per-image flags). A cluster's server, and every Job that talks to
// it (dump, restore, credentials), run the same repository at the same tag, spec.version:
// the clients in the server's image are the ones that match the server, so a dump needs
// no second image to pull, and pg_dump is never older than the server it dumps (it
// refuses servers newer than itself).
const (
	// DefaultPostgreSQLImage is the official PostgreSQL image: postgres, pg_dump, psql.
	DefaultPostgreSQLImage = "docker.io/library/postgres"
	// DefaultMySQLImage is the official MySQL image: mysqld, mysqldump, mysql.
	DefaultMySQLImage = "docker.io/library/mysql"
	// DefaultMariaDBImage is the official MariaDB image: mariadbd, mariadb-dump, mariadb
	// (recent tags no longer have the mysql* names).
	DefaultMariaDBImage = "docker.io/library/mariadb"
	// DefaultCleanupImage runs the cleanup script, which needs only a shell and rm; it is
	// not tied to an engine, so it has a tag of its own.
	DefaultCleanupImage = "docker.io/library/busybox:1.37"
)

// Images are the images of the pods Mooring builds for databases: the one source of
// them for the database controller (the servers) and this package (the Jobs). A cluster
// that pulls only from a mirror (air-gapped, or with Docker Hub blocked) cannot run the
// defaults.
type Images struct {
	// PostgreSQL, MySQL and MariaDB are repositories without a tag: the tag is the
	// cluster's spec.version, for the server and its Jobs alike.
	PostgreSQL, MySQL, MariaDB string
	// Cleanup is a whole image reference, with its tag or digest.
	Cleanup string
}

// DefaultImages are the images on Docker Hub.
func DefaultImages() Images {
	return Images{PostgreSQL: DefaultPostgreSQLImage, MySQL: DefaultMySQLImage, MariaDB: DefaultMariaDBImage, Cleanup: DefaultCleanupImage}
}

// images is set once at start (SetImages) and read by every pod built after; atomic, as
// reconciles read it from many goroutines.
var images atomic.Pointer[Images]

func init() {
	d := DefaultImages()
	images.Store(&d)
}

// SetImages makes the pods built from now on run i. It refuses a repository with a tag
// (the tag is the server's version) and anything that is not an image reference, and
// then leaves the images as they were. Changing the server images of running clusters
// rolls their pods, as any change of the pod template does.
func SetImages(i Images) error {
	for _, repo := range []string{i.PostgreSQL, i.MySQL, i.MariaDB} {
		if err := ValidateRepository(repo); err != nil {
			return err
		}
	}
	if _, err := reference.ParseNormalizedNamed(i.Cleanup); err != nil {
		return fmt.Errorf("image %q: %w", i.Cleanup, err)
	}
	images.Store(&i)
	return nil
}

// CurrentImages are the images pods are built with.
func CurrentImages() Images { return *images.Load() }

// ValidateRepository accepts an image repository without a tag or digest, such as
// "mirror.example.com/library/postgres".
func ValidateRepository(repo string) error {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return fmt.Errorf("image repository %q: %w", repo, err)
	}
	if !reference.IsNameOnly(named) {
		return fmt.Errorf("image repository %q has a tag or digest; give the repository alone, its tag is the database version", repo)
	}
	return nil
}

// WithRegistry moves a Docker Hub image (docker.io/...) to registry, which may carry a
// path: "mirror.example.com/hub" makes docker.io/library/postgres
// mirror.example.com/hub/library/postgres, the layout of a pull-through cache or of
// `crane copy` into a mirror. An empty registry, or an image not on Docker Hub, is
// returned unchanged.
func WithRegistry(image, registry string) string {
	registry = strings.TrimSuffix(registry, "/")
	rest, onHub := strings.CutPrefix(image, "docker.io/")
	if registry == "" || !onHub {
		return image
	}
	return registry + "/" + rest
}

// Repository is the repository, without a tag, of the engine's server image. An engine
// this package does not know gets PostgreSQL's, the API's first engine, as it always has.
func Repository(engine v1beta1.DatabaseEngine) string {
	i := CurrentImages()
	switch engine {
	case v1beta1.MySQL:
		return i.MySQL
	case v1beta1.MariaDB:
		return i.MariaDB
	default:
		return i.PostgreSQL
	}
}

// ServerImage is the image a cluster of engine at version runs: its server, and the
// dump, restore and credentials Jobs, which use the clients the server's image ships.
func ServerImage(engine v1beta1.DatabaseEngine, version string) string {
	return Repository(engine) + ":" + version
}
