// Package openapi holds the portal's OpenAPI 3 document (openapi.yaml, written first and
// kept in the repository) and serves it as JSON.
package openapi

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var document []byte

// YAML is the document as written.
func YAML() []byte { return document }

// JSON is the document in JSON, as served at /api/v1/openapi.json.
func JSON() ([]byte, error) {
	j, err := yaml.YAMLToJSON(document)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	return j, nil
}
