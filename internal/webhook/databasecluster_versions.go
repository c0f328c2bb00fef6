package webhook

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// engineNames are the engines as messages name them.
var engineNames = map[v1beta1.DatabaseEngine]string{
	v1beta1.PostgreSQL: "PostgreSQL",
	v1beta1.MySQL:      "MySQL",
	v1beta1.MariaDB:    "MariaDB",
}

// releaseSeries is the part of a version that decides whether a server can run on another
// version's data files: the major version for PostgreSQL ("17" of "17.2"), the release
// series for MySQL ("8.4" of "8.4.3") and MariaDB ("11.8" of "11.8.2"). spec.version
// names just that, so today every allowed version change is a change of series; a patch
// (or PostgreSQL minor) release within a series changes nothing here.
func releaseSeries(engine v1beta1.DatabaseEngine, version string) ([]int, bool) {
	parts := strings.Split(version, ".")
	n := 2 // MySQL, MariaDB; and PostgreSQL before 10 ("9.6")
	if engine == v1beta1.PostgreSQL && len(parts) > 0 {
		if major, err := strconv.Atoi(parts[0]); err == nil && major >= 10 {
			n = 1
		}
	}
	if len(parts) < n {
		return nil, false
	}
	series := make([]int, n)
	for i := range n {
		v, err := strconv.Atoi(parts[i])
		if err != nil {
			return nil, false
		}
		series[i] = v
	}
	return series, true
}

// inPlaceUpgrades are the series changes the engine makes on its own when the new server
// starts on the old data: MySQL upgrades its data dictionary at startup from one LTS
// series to the next (8.0 to 8.4). PostgreSQL needs pg_upgrade (which the image does not
// run) for any major version, and MariaDB needs mariadb-upgrade (which Mooring does not
// run) to bring its system tables to a new series, so neither has any. No engine
// downgrades in place.
var inPlaceUpgrades = map[v1beta1.DatabaseEngine]map[string][]string{
	v1beta1.MySQL: {"8.0": {"8.4"}},
}

// validateVersionChange rejects a version change the StatefulSet's new image could not
// start on the existing data volumes with.
func validateVersionChange(old, db *v1beta1.DatabaseCluster) *field.Error {
	from, to := old.Spec.Version, db.Spec.Version
	if from == to || db.Spec.Engine != old.Spec.Engine {
		return nil
	}
	oldSeries, ok1 := releaseSeries(db.Spec.Engine, from)
	newSeries, ok2 := releaseSeries(db.Spec.Engine, to)
	if !ok1 || !ok2 {
		return nil // not a version Mooring runs: the supported-versions check answers
	}
	path := field.NewPath("spec", "version")
	name := engineNames[db.Spec.Engine]
	instead := fmt.Sprintf("create a new DatabaseCluster at version %s and restore a backup of this one into it", to)
	switch c := slices.Compare(newSeries, oldSeries); {
	case c == 0:
		return nil
	case c < 0:
		return field.Forbidden(path, fmt.Sprintf(
			"downgrading %s from %s to %s is not supported: a %s server cannot use data files written by %s; %s",
			name, from, to, to, from, instead))
	case slices.Contains(inPlaceUpgrades[db.Spec.Engine][from], to):
		return nil
	default:
		return field.Forbidden(path, fmt.Sprintf(
			"upgrading %s from %s to %s changes the major version, which the database image cannot do in place on the existing data; %s",
			name, from, to, instead))
	}
}
