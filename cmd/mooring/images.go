package main

import (
	"flag"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mooringhq/mooring/internal/dump"
)

// imageFlags choose the images Mooring runs for DatabaseClusters and their dump,
// restore, credentials and cleanup Jobs. A cluster's Jobs run its server's image (the
// clients that match the server are the ones in its image), so one repository per
// engine is all there is to choose. Clusters that pull only from a mirror (air-gapped,
// or with Docker Hub blocked) set --image-registry; a repository flag names one image
// outright, for a mirror laid out differently or a build of one's own.
type imageFlags struct {
	registry                   string
	postgresql, mysql, mariadb string
	cleanup                    string
	// postgresqlClient and mysqlClient are the flags of the separate client images
	// Mooring once ran its Jobs with; accepted so that a deployment that still passes
	// them starts, and ignored (apply warns).
	postgresqlClient, mysqlClient string
}

// deprecatedClientUsage is the usage of the retired client image flags.
const deprecatedClientUsage = "Deprecated: dumps, restores and credential changes now run the server image (--%s-image); ignored."

func bindImageFlags(fs *flag.FlagSet) *imageFlags {
	f := &imageFlags{}
	fs.StringVar(&f.registry, "image-registry", "", "Registry, with an optional path, that replaces docker.io in every default database and cleanup image: mirror.example.com/hub pulls mirror.example.com/hub/library/postgres:<version>. Images given by the flags below are used as they are.")
	repo := func(p *string, name, engine, def string) {
		fs.StringVar(p, name, "", "Repository (no tag: the tag is spec.version) of the "+engine+" image, which runs the server and its dump, restore and credentials Jobs; "+def+" under --image-registry when empty.")
	}
	repo(&f.postgresql, "postgresql-image", "PostgreSQL", dump.DefaultPostgreSQLImage)
	repo(&f.mysql, "mysql-image", "MySQL", dump.DefaultMySQLImage)
	repo(&f.mariadb, "mariadb-image", "MariaDB", dump.DefaultMariaDBImage)
	fs.StringVar(&f.cleanup, "cleanup-image", "", "Image (with its tag) of the Job that removes a deleted Backup's dumps; "+dump.DefaultCleanupImage+" under --image-registry when empty.")
	fs.StringVar(&f.postgresqlClient, "postgresql-client-image", "", fmt.Sprintf(deprecatedClientUsage, "postgresql"))
	fs.StringVar(&f.mysqlClient, "mysql-client-image", "", fmt.Sprintf(deprecatedClientUsage, "mysql"))
	return f
}

// apply hands the images to the packages that build the pods, before any controller
// runs; it fails on a value that is not an image reference, or a repository with a tag.
// A retired client image flag is logged, not refused: it changes nothing, and refusing
// it would keep an operator from starting after an upgrade.
func (f *imageFlags) apply() error {
	for _, w := range f.warnings() {
		ctrl.Log.WithName("setup").Info(w)
	}
	pick := func(given, fallback string) string {
		if given != "" {
			return given
		}
		return dump.WithRegistry(fallback, f.registry)
	}
	return dump.SetImages(dump.Images{
		PostgreSQL: pick(f.postgresql, dump.DefaultPostgreSQLImage),
		MySQL:      pick(f.mysql, dump.DefaultMySQLImage),
		MariaDB:    pick(f.mariadb, dump.DefaultMariaDBImage),
		Cleanup:    pick(f.cleanup, dump.DefaultCleanupImage),
	})
}

// warnings are what apply logs about the flags it ignores.
func (f *imageFlags) warnings() []string {
	var out []string
	for _, d := range []struct{ name, value, engine string }{
		{"postgresql-client-image", f.postgresqlClient, "postgresql"},
		{"mysql-client-image", f.mysqlClient, "mysql"},
	} {
		if d.value != "" {
			out = append(out, fmt.Sprintf("Ignoring the deprecated --%s=%s: dumps, restores and credential changes run the server image, --%s-image", d.name, d.value, d.engine))
		}
	}
	return out
}
