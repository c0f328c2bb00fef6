package dump

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/distribution/reference"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// The images the dump and cleanup Jobs run unless the operator is told otherwise
// (cmd/mooring's --image-registry and per-image flags).
const (
	// DefaultPostgreSQLClient is the repository of pg_dump; the tag is the server's version.
	DefaultPostgreSQLClient = "docker.io/library/postgres"
	// DefaultMySQLClient is the repository of mysqldump; the tag is the server's version.
	DefaultMySQLClient = "docker.io/library/mysql"
	// DefaultCleanupImage runs the cleanup script, which needs only a shell and rm.
	DefaultCleanupImage = "docker.io/library/busybox:1.37"
)

// Images are the images of the Jobs this package builds. A cluster that pulls only from
// a mirror (air-gapped, or with Docker Hub blocked) cannot run the defaults.
type Images struct {
	// PostgreSQLClient and MySQLClient are repositories without a tag: the tag is the
	// server's version, since pg_dump refuses servers newer than itself.
	PostgreSQLClient, MySQLClient string
	// Cleanup is a whole image reference, with its tag or digest.
	Cleanup string
}

// DefaultImages are the images on Docker Hub.
func DefaultImages() Images {
	return Images{PostgreSQLClient: DefaultPostgreSQLClient, MySQLClient: DefaultMySQLClient, Cleanup: DefaultCleanupImage}
}

// images is set once at start (SetImages) and read by every Job built after; atomic,
// as reconciles read it from many goroutines.
var images atomic.Pointer[Images]

func init() {
	d := DefaultImages()
	images.Store(&d)
}

// SetImages makes the Jobs built from now on run i. It refuses a repository with a tag
// (the tag is the server's version) and anything that is not an image reference.
func SetImages(i Images) error {
	for _, repo := range []string{i.PostgreSQLClient, i.MySQLClient} {
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

// CurrentImages are the images Jobs are built with.
func CurrentImages() Images { return *images.Load() }

// ValidateRepository accepts an image repository without a tag or digest, such as
// "mirror.example.com/bitnami/postgresql".
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

// ClientImage is the image whose pg_dump, psql, mysqldump or mysql matches the server.
func ClientImage(engine v1beta1.DatabaseEngine, version string) string {
	i := CurrentImages()
	switch engine {
	case v1beta1.MySQL:
		return i.MySQLClient + ":" + version
	default:
		return i.PostgreSQLClient + ":" + version
	}
}
