package database

import (
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dump"
)

// serverImage is the repository (no tag: the tag is spec.version) of the engine's server
// image. The images live in package dump (dump.Images, set at start by cmd/mooring),
// because the server and the Jobs that dump, restore and change the credentials of a
// cluster run one image: the clients that match a server are the ones in its image, and
// a second image per engine would be a second thing to mirror and keep in step.
func serverImage(engine v1beta1.DatabaseEngine) string {
	return dump.Repository(engine)
}
