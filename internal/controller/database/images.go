package database

import (
	"sync/atomic"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dump"
)

// The server images a cluster runs unless the operator is told otherwise (cmd/mooring's
// --image-registry and per-image flags). The tag is spec.version.
const (
	DefaultPostgreSQLImage = "docker.io/bitnami/postgresql"
	DefaultMySQLImage      = "docker.io/bitnami/mysql"
)

// Images are the repositories of the server images, without a tag. A cluster that pulls
// only from a mirror cannot run the defaults. Another image must keep the Bitnami
// image's contract (doc.go).
type Images struct {
	PostgreSQL, MySQL string
}

// DefaultImages are the images on Docker Hub.
func DefaultImages() Images {
	return Images{PostgreSQL: DefaultPostgreSQLImage, MySQL: DefaultMySQLImage}
}

// images is set once at start and read by every reconcile; atomic for the many
// goroutines that read it.
var images atomic.Pointer[Images]

func init() {
	d := DefaultImages()
	images.Store(&d)
}

// SetImages makes the StatefulSets built from now on run i. Changing the images of
// running clusters rolls their pods, as any change of the pod template does.
func SetImages(i Images) error {
	for _, repo := range []string{i.PostgreSQL, i.MySQL} {
		if err := dump.ValidateRepository(repo); err != nil {
			return err
		}
	}
	images.Store(&i)
	return nil
}

// CurrentImages are the server images StatefulSets are built with.
func CurrentImages() Images { return *images.Load() }

// serverImage is the repository of the engine's server image.
func serverImage(engine v1beta1.DatabaseEngine) string {
	if engine == v1beta1.MySQL {
		return CurrentImages().MySQL
	}
	return CurrentImages().PostgreSQL
}
