// Package samples embeds the sample objects of config/samples, so programs (the kubectl
// plugin's doctor) can use exactly the objects the documentation shows.
package samples

import "embed"

// FS holds every sample manifest (mooring_*.yaml).
//
//go:embed mooring_*.yaml
var FS embed.FS
