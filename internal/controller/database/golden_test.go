package database

import (
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/golden"
)

// Existing DatabaseClusters' children change only where a change means them to: the
// golden files were written by the builders before pods were spread over nodes (commit
// "controller: golden children of caches and databases"), and each later change to them
// is a reviewed diff.
func TestGoldenChildren(t *testing.T) {
	clusters := map[string]*v1beta1.DatabaseCluster{
		"postgresql-one-instance":    newDB(v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 1 }),
		"postgresql-three-instances": newDB(v1beta1.PostgreSQL, nil),
		"mariadb-two-instances": newDB(v1beta1.MariaDB, func(d *v1beta1.DatabaseCluster) {
			d.Spec.ReplicaCount, d.Spec.Version = 2, "11.8"
		}),
	}
	for name, db := range clusters {
		t.Run(name, func(t *testing.T) {
			sts, err := StatefulSet(db)
			if err != nil {
				t.Fatal(err)
			}
			golden.JSON(t, filepath.Join("testdata", name+".golden.json"), append(Children(db), client.Object(sts)))
		})
	}
}
