package openapi

import (
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The document's kind parameter lists the kinds the portal serves: api/v1's, by plural.
func TestKindParameterListsTheAPIsKinds(t *testing.T) {
	var doc struct {
		Components struct {
			Parameters struct {
				Kind struct {
					Schema struct {
						Enum []string `json:"enum"`
					} `json:"schema"`
				} `json:"Kind"`
			} `json:"parameters"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(YAML(), &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range mooringv1.Kinds() {
		want = append(want, k.Plural)
	}
	if got := doc.Components.Parameters.Kind.Schema.Enum; !slices.Equal(got, want) {
		t.Errorf("components.parameters.Kind enum %v, want api/v1's kinds %v", got, want)
	}
}
