package validate

import "testing"

// The served document, with the kinds' CRD schemas in it, is a valid OpenAPI document
// that kin-openapi can route.
func TestDocumentLoads(t *testing.T) {
	if _, err := New(); err != nil {
		t.Fatal(err)
	}
}
