// Package openapi holds the portal's OpenAPI 3 document. openapi.yaml is written by hand
// (paths, status codes, the portal's own schemas) with paths for any kind under {kind};
// Build writes those out per kind with each kind's schema taken from its CRD in
// config/crd/bases, into zz_generated.openapi.json, the document served at
// /api/v1/openapi.json. A test fails when the generated file differs from what Build
// makes of openapi.yaml and the CRDs, so the document cannot drift from either.
package openapi

//go:generate go run github.com/mooringhq/mooring/hack/openapi

import (
	_ "embed"
)

//go:embed openapi.yaml
var source []byte

//go:embed zz_generated.openapi.json
var document []byte

// Source is openapi.yaml, the document as written, before Build.
func Source() []byte { return source }

// JSON is the served document (zz_generated.openapi.json), as served at /api/v1/openapi.json.
func JSON() []byte { return document }
