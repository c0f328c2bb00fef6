package webhook

import "github.com/mooringhq/mooring/api/v1beta1"

// engineVersions lists the versions Mooring runs for each engine; the first is the
// default for new clusters. Keep them to majors the images are published for.
var engineVersions = map[v1beta1.DatabaseEngine][]string{
	v1beta1.PostgreSQL: {"18", "17", "16", "15", "14"},
	v1beta1.MySQL:      {"8.4", "8.0"},
	v1beta1.MariaDB:    {"11.8", "11.4", "10.11"}, // its long-term support series
}

// DefaultVersion is the version a new cluster of the engine gets when none is given.
func DefaultVersion(engine v1beta1.DatabaseEngine) string {
	if v := engineVersions[engine]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SupportedVersions lists the versions Mooring runs for the engine.
func SupportedVersions(engine v1beta1.DatabaseEngine) []string { return engineVersions[engine] }
