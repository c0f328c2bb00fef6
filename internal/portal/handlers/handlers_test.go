package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

func init() { gin.SetMode(gin.TestMode) }

func TestErrorsKeepTheAPIServersAnswer(t *testing.T) {
	gr := schema.GroupResource{Group: "mooring.dev", Resource: "apps"}
	tests := map[string]struct {
		err        error
		wantStatus int
		wantCode   string
		wantFields []string
	}{
		"forbidden": {apierrors.NewForbidden(gr, "web", errors.New("no")), 403, "Forbidden", nil},
		"not found": {apierrors.NewNotFound(gr, "web"), 404, "NotFound", nil},
		"conflict":  {apierrors.NewAlreadyExists(gr, "web"), 409, "AlreadyExists", nil},
		"invalid": {apierrors.NewInvalid(schema.GroupKind{Group: "mooring.dev", Kind: "App"}, "web", field.ErrorList{
			field.Required(field.NewPath("spec", "image"), "an image is required"),
			field.Invalid(field.NewPath("spec", "replicas"), -1, "must be >= 0"),
		}), 422, "Invalid", []string{"spec.image", "spec.replicas"}},
		"service invalid": {&services.Error{Kind: services.KindInvalid, Message: "bad", Fields: []models.FieldError{{Field: "email", Message: "bad"}}}, 422, CodeValidation, []string{"email"}},
		"unauthorized":    {&services.Error{Kind: services.KindUnauthorized, Message: "no"}, 401, CodeUnauthorized, nil},
		"internal":        {errors.New("etcd is on fire"), 500, CodeInternal, nil},
		// A cause that names no field is in the message already; it is no field error.
		"no field": {apierrors.NewGenericServerResponse(403, "get", gr, "web", "unknown", 0, true), 403, "Forbidden", nil},
		"bad continue token": {&services.Error{Kind: services.KindBadRequest, Message: "continue: bad",
			Fields: []models.FieldError{{Field: "continue", Message: "bad"}}}, 400, CodeBadRequest, []string{"continue"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			c.Request = httptest.NewRequest("GET", "/", nil)
			WriteError(c, tc.err)
			if w.Code != tc.wantStatus {
				t.Fatalf("status: want %d, got %d", tc.wantStatus, w.Code)
			}
			var body models.ErrorResponse
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Code != tc.wantCode || body.Error.Fields == nil {
				t.Fatalf("want code %s and a fields list, got %+v", tc.wantCode, body.Error)
			}
			var got []string
			for _, f := range body.Error.Fields {
				got = append(got, f.Field)
			}
			if len(got) != len(tc.wantFields) || strings.Join(got, ",") != strings.Join(tc.wantFields, ",") {
				t.Fatalf("fields: want %q, got %q", tc.wantFields, got)
			}
			if strings.Contains(w.Body.String(), "etcd is on fire") {
				t.Fatal("an internal error's text must stay in the log, not reach the client")
			}
		})
	}
}

func TestBindJSONIsStrict(t *testing.T) {
	tests := map[string]struct {
		body      string
		wantField string
		ok        bool
	}{
		"valid":         {`{"username":"ann","password":"x"}`, "", true},
		"unknown field": {`{"username":"ann","password":"x","role":"admin"}`, "role", false},
		"wrong type":    {`{"username":["ann"],"password":"x"}`, "username", false},
		"two values":    {`{"username":"ann"} {"username":"bob"}`, "", false},
		"not an object": {`"ann"`, "", false},
		"empty":         {``, "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var req models.LoginRequest
			err := decodeStrict([]byte(tc.body), &req)
			if tc.ok != (err == nil) {
				t.Fatalf("ok: want %v, got err %v", tc.ok, err)
			}
			var re *requestError
			if err != nil && (!errors.As(err, &re) || re.status != http.StatusBadRequest) {
				t.Fatalf("want a 400 requestError, got %v", err)
			}
			if tc.wantField != "" && (len(re.fields) == 0 || re.fields[0].Field != tc.wantField) {
				t.Fatalf("want the error to name %q, got %+v", tc.wantField, re)
			}
		})
	}
}
