package routes_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/portal/openapi"
	"github.com/mooringhq/mooring/internal/portal/routes"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode) // no route listing on stdout
	os.Exit(m.Run())
}

// operation is what these tests read of an operation of the served document.
type operation struct {
	ID          string            `json:"operationId"`
	Security    *[]map[string]any `json:"security"`
	RequestBody any               `json:"requestBody"`
	Parameters  []struct {
		Ref string `json:"$ref"`
	} `json:"parameters"`
	Responses map[string]any `json:"responses"`
}

// documented is the served document's operations by "METHOD /path".
func documented(t *testing.T) map[string]operation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string]operation{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			ops[strings.ToUpper(method)+" "+path] = op
		}
	}
	return ops
}

// served is the router's routes as "METHOD /path" in the document's spelling, the :kind
// routes written out per kind as the document writes them.
func served(t *testing.T) []string {
	t.Helper()
	r, err := routes.New(routes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rt := range r.Routes() {
		segs := strings.Split(rt.Path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") {
				segs[i] = "{" + s[1:] + "}"
			}
		}
		path := strings.Join(segs, "/")
		if !strings.Contains(path, "{kind}") {
			out = append(out, rt.Method+" "+path)
			continue
		}
		for _, k := range mooringv1.Kinds() {
			out = append(out, rt.Method+" "+strings.Replace(path, "{kind}", k.Plural, 1))
		}
	}
	return out
}

// The document lists every route the portal serves, and nothing else.
func TestDocumentListsEveryRoute(t *testing.T) {
	ops := documented(t)
	routes := served(t)
	for _, r := range routes {
		if _, ok := ops[r]; !ok {
			t.Errorf("%s is served but not in the OpenAPI document", r)
		}
	}
	for op := range ops {
		if !slices.Contains(routes, op) {
			t.Errorf("%s is in the OpenAPI document but not served", op)
		}
	}
}

// Every status code the middleware and handlers of a route can answer is documented for
// it: what the route is (authenticated, taking a body, with a namespace or name in its
// path, reaching the cluster, listing a page) decides which codes it can answer.
func TestDocumentListsEveryStatusCode(t *testing.T) {
	for key, op := range documented(t) {
		method, path, _ := strings.Cut(key, " ")
		want := []string{"500"} // recovery, and any error the handlers do not know
		authenticated := op.Security == nil || len(*op.Security) > 0
		if authenticated {
			want = append(want, "401", "429") // middleware.Auth, the per-user rate limit
		}
		if slices.Contains([]string{"register", "login", "refresh"}, op.ID) {
			want = append(want, "429") // the per-IP rate limit
		}
		if op.RequestBody != nil {
			want = append(want, "400", "413", "415") // bad JSON or keys, BodyLimit, JSONOnly
		}
		if strings.Contains(path, "{ns}") || strings.Contains(path, "{name}") {
			want = append(want, "400") // middleware.PathParams
		}
		// Users, sessions and objects live in the cluster: its deadline answers 504. The
		// document and the sign-in configuration are the portal's own.
		if strings.HasPrefix(path, "/api/v1/") && op.ID != "openapi" && op.ID != "ssoInfo" {
			want = append(want, "504")
		}
		for _, p := range op.Parameters {
			if strings.HasSuffix(p.Ref, "/Continue") {
				want = append(want, "410") // an expired continue token
			}
		}
		// Objects and events: whatever else the API server answers passes through.
		if strings.HasPrefix(path, "/api/v1/namespaces/{ns}/") {
			want = append(want, "default")
		}
		for _, code := range want {
			if _, ok := op.Responses[code]; !ok {
				t.Errorf("%s %s (%s) can answer %s, which the document does not list", method, path, op.ID, code)
			}
		}
	}
}
