package database

import (
	"fmt"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// engineSpec is what differs between the engines in the pods Mooring builds; everything
// else about an engine is the instance manager's (internal/instance).
type engineSpec struct {
	port int32
	user string // the application user created in the generated Secret
}

var engines = map[v1beta1.DatabaseEngine]engineSpec{
	v1beta1.PostgreSQL: {port: 5432, user: "app"},
	v1beta1.MySQL:      {port: 3306, user: "app"},
	v1beta1.MariaDB:    {port: 3306, user: "app"},
}

func engineFor(db *v1beta1.DatabaseCluster) (engineSpec, error) {
	e, ok := engines[db.Spec.Engine]
	if !ok {
		return engineSpec{}, fmt.Errorf("unknown engine %q", db.Spec.Engine)
	}
	return e, nil
}

// Port is the port clients connect to for the cluster's engine.
func Port(db *v1beta1.DatabaseCluster) int32 { return engines[db.Spec.Engine].port }
