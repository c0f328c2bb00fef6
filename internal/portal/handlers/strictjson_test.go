package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// TestEveryBodyRefusesDuplicateKeys: every handler that reads a JSON body (accounts,
// teams, objects, merge patches) refuses a key given twice, at any depth, and a number
// that does not fit, with 400 naming the key by its path, before any service sees the
// body. The services are nil: a body that got through would panic (500).
func TestEveryBodyRefusesDuplicateKeys(t *testing.T) {
	r := gin.New()
	r.Use(gin.CustomRecovery(func(c *gin.Context, _ any) { c.AbortWithStatus(http.StatusInternalServerError) }))
	r.POST("/users", (&Users{}).Register)
	r.POST("/login", (&Users{}).Login)
	r.PATCH("/users/me", (&Users{}).UpdateMe)
	r.PATCH("/users/x", (&Users{}).Update)
	r.POST("/teams", (&Teams{}).Create)
	r.PATCH("/teams/x", (&Teams{}).Update)
	r.POST("/objects", (&Resources{}).Create)
	r.PUT("/objects/x", (&Resources{}).Update)
	r.PATCH("/objects/x", (&Resources{}).Patch)
	tests := map[string]struct {
		method, path, body string
		wantField          string
	}{
		"register":       {"POST", "/users", `{"username":"ann","email":"a@example.com","password":"a long password","username":"bob"}`, "username"},
		"login":          {"POST", "/login", `{"username":"ann","password":"x","password":"y"}`, "password"},
		"update me":      {"PATCH", "/users/me", `{"email":"a@example.com","email":"b@example.com"}`, "email"},
		"update user":    {"PATCH", "/users/x", `{"role":"developer","namespaces":["a"],"role":"admin"}`, "role"},
		"create team":    {"POST", "/teams", `{"name":"t","role":"developer","name":"u"}`, "name"},
		"update team":    {"PATCH", "/teams/x", `{"members":["a"],"members":["b"]}`, "members"},
		"object":         {"POST", "/objects", `{"metadata":{"name":"web"},"spec":{"image":"x","replicas":1,"replicas":3}}`, "spec.replicas"},
		"top level":      {"POST", "/objects", `{"kind":"App","metadata":{"name":"web"},"kind":"Backup"}`, "kind"},
		"replace":        {"PUT", "/objects/x", `{"metadata":{"name":"x","labels":{"a":"1","a":"2"}}}`, "metadata.labels.a"},
		"in an array":    {"PATCH", "/objects/x", `{"spec":{"env":[{"name":"A","value":"1"},{"name":"B","name":"C"}]}}`, "spec.env[1].name"},
		"overflow":       {"POST", "/objects", `{"metadata":{"name":"web"},"spec":{"replicas":1e400}}`, "spec.replicas"},
		"overflow too":   {"PATCH", "/objects/x", `{"spec":{"port":-1e999}}`, "spec.port"},
		"overflow typed": {"POST", "/users", `{"username":1e400,"email":"a@example.com","password":"a long password"}`, "username"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			r.ServeHTTP(w, req)
			if w.Code != http.StatusBadRequest {
				t.Fatalf("want 400, got %d %s", w.Code, w.Body)
			}
			var body models.ErrorResponse
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			e := body.Error
			if len(e.Fields) != 1 || e.Fields[0].Field != tc.wantField || !strings.Contains(e.Message, tc.wantField) {
				t.Fatalf("want one field error naming %q (and the message naming it), got %+v", tc.wantField, e)
			}
		})
	}
}
