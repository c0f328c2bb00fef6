package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

func readCRDs(t *testing.T) map[string][]byte {
	t.Helper()
	crds := map[string][]byte{}
	for _, k := range mooringv1.Kinds() {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "crd", "bases", CRDFile(k)))
		if err != nil {
			t.Fatal(err)
		}
		crds[CRDFile(k)] = data
	}
	return crds
}

// A change to a CRD reaches the document, so the staleness test below sees it; a
// missing CRD is an error, not a kind left untyped.
func TestBuildFollowsTheCRDs(t *testing.T) {
	crds := readCRDs(t)
	app := CRDFile(mooringv1.Kinds()[0])
	crds[app] = bytes.Replace(crds[app], []byte("AppSpec is what"), []byte("ChangedSpec is what"), 1)
	doc, err := Build(Source(), crds)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("ChangedSpec is what")) || bytes.Equal(doc, JSON()) {
		t.Errorf("a changed App CRD did not change the document")
	}
	delete(crds, app)
	if _, err := Build(Source(), crds); err == nil {
		t.Errorf("Build without the App CRD: want an error")
	}
}

// The served document is what Build makes of openapi.yaml and today's CRDs: a CRD
// changed by make manifests, or openapi.yaml edited, without go generate fails here.
func TestGeneratedDocumentMatchesTheCRDs(t *testing.T) {
	want, err := Build(Source(), readCRDs(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(JSON(), want) {
		t.Errorf("%s is stale (it differs from what openapi.yaml and config/crd/bases make): run go generate ./internal/portal/openapi and commit the result", GeneratedFile)
	}
}

// Every kind api/v1 lists has its paths, and its schema's spec is the CRD's: a field of
// each kind's spec, read from the CRD, is in the document.
func TestEveryKindIsTyped(t *testing.T) {
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range mooringv1.Kinds() {
		for _, p := range []string{"/api/v1/namespaces/{ns}/" + k.Plural, "/api/v1/namespaces/{ns}/" + k.Plural + "/{name}"} {
			if _, ok := doc.Paths[p]; !ok {
				t.Errorf("%s: no path %s", k.Kind, p)
			}
		}
		for _, name := range []string{k.Kind, k.Kind + "Input", k.Kind + "List", k.Kind + "Spec", k.Kind + "Status"} {
			if _, ok := doc.Components.Schemas[name]; !ok {
				t.Errorf("%s: no schema %s", k.Kind, name)
			}
		}
		if len(doc.Components.Schemas[k.Kind+"Spec"].Properties) == 0 {
			t.Errorf("%sSpec has no properties: the CRD's schema did not reach the document", k.Kind)
		}
	}
	for p := range doc.Paths {
		if bytes.Contains([]byte(p), []byte(kindSegment)) {
			t.Errorf("path %s still has the {kind} placeholder", p)
		}
	}
}
