package main

import (
	"flag"

	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/dump"
)

// imageFlags choose the images Mooring runs for DatabaseClusters and their dump,
// credentials and cleanup Jobs. Clusters that pull only from a mirror (air-gapped, or
// with Docker Hub blocked) set --image-registry; a repository flag names one image
// outright, for a mirror laid out differently or a build of one's own.
type imageFlags struct {
	registry                               string
	postgresql, mysql                      string
	postgresqlClient, mysqlClient, cleanup string
}

func bindImageFlags(fs *flag.FlagSet) *imageFlags {
	f := &imageFlags{}
	fs.StringVar(&f.registry, "image-registry", "", "Registry, with an optional path, that replaces docker.io in every default database, dump and cleanup image: mirror.example.com/hub pulls mirror.example.com/hub/bitnami/postgresql:<version>. Images given by the flags below are used as they are.")
	fs.StringVar(&f.postgresql, "postgresql-image", "", "Repository (no tag: the tag is spec.version) of the PostgreSQL server image; "+database.DefaultPostgreSQLImage+" under --image-registry when empty.")
	fs.StringVar(&f.mysql, "mysql-image", "", "Repository (no tag: the tag is spec.version) of the MySQL server image; "+database.DefaultMySQLImage+" under --image-registry when empty.")
	fs.StringVar(&f.postgresqlClient, "postgresql-client-image", "", "Repository (no tag) of the image with pg_dump and psql for backups and credential changes; "+dump.DefaultPostgreSQLClient+" under --image-registry when empty.")
	fs.StringVar(&f.mysqlClient, "mysql-client-image", "", "Repository (no tag) of the image with mysqldump and mysql for backups and credential changes; "+dump.DefaultMySQLClient+" under --image-registry when empty.")
	fs.StringVar(&f.cleanup, "cleanup-image", "", "Image (with its tag) of the Job that removes a deleted Backup's dumps; "+dump.DefaultCleanupImage+" under --image-registry when empty.")
	return f
}

// apply hands the images to the packages that build the pods, before any controller
// runs; it fails on a value that is not an image reference, or a repository with a tag.
func (f *imageFlags) apply() error {
	pick := func(given, fallback string) string {
		if given != "" {
			return given
		}
		return dump.WithRegistry(fallback, f.registry)
	}
	if err := database.SetImages(database.Images{
		PostgreSQL: pick(f.postgresql, database.DefaultPostgreSQLImage),
		MySQL:      pick(f.mysql, database.DefaultMySQLImage),
	}); err != nil {
		return err
	}
	return dump.SetImages(dump.Images{
		PostgreSQLClient: pick(f.postgresqlClient, dump.DefaultPostgreSQLClient),
		MySQLClient:      pick(f.mysqlClient, dump.DefaultMySQLClient),
		Cleanup:          pick(f.cleanup, dump.DefaultCleanupImage),
	})
}
