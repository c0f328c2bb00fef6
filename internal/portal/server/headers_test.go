package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestAPIAnswersAreNotCachedOrSniffed: every API answer, success or error, carries
// Cache-Control: no-store and X-Content-Type-Options: nosniff.
func TestAPIAnswersAreNotCachedOrSniffed(t *testing.T) {
	p := newPortal(t, nil)
	tok := p.adminToken()
	for what, r := range map[string]struct {
		method, path, token string
	}{
		"me":           {"GET", "/api/v1/users/me", tok},
		"users":        {"GET", "/api/v1/users", tok},
		"unauthorized": {"GET", "/api/v1/users/me", ""},
		"openapi":      {"GET", "/api/v1/openapi.json", ""},
	} {
		got := p.Do(r.method, r.path, r.token, nil)
		if got.Status >= 500 {
			t.Fatalf("%s: %d %s", what, got.Status, got.Body)
		}
		if got.Header.Get("Cache-Control") != "no-store" || got.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%d): want Cache-Control no-store and nosniff, got %q, %q", what, got.Status,
				got.Header.Get("Cache-Control"), got.Header.Get("X-Content-Type-Options"))
		}
	}
}

// TestEveryAnswerCarriesTheSecurityHeaders: every route the portal serves, API and web
// UI, and paths or methods no route serves (404, 405) answer with nosniff, no-store
// (static assets aside, which may be cached), no framing and the Content-Security-Policy.
func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	p := newPortal(t, nil)
	engine, ok := p.srv.Handler.(*gin.Engine)
	if !ok {
		t.Fatalf("the portal's handler is a %T, not the gin engine", p.srv.Handler)
	}
	type request struct{ method, path string }
	var reqs []request
	for _, rt := range engine.Routes() {
		segs := strings.Split(rt.Path, "/")
		for i, s := range segs {
			switch {
			case s == ":kind":
				segs[i] = "apps"
			case strings.HasPrefix(s, ":"):
				segs[i] = "x"
			case strings.HasPrefix(s, "*"):
				segs[i] = "ui.css"
			}
		}
		reqs = append(reqs, request{rt.Method, strings.Join(segs, "/")})
	}
	// Unmatched paths (404) and methods (405), under the API, the UI and neither.
	reqs = append(reqs, request{"GET", "/api/v1/nope"}, request{"GET", "/api/v1/users/x/y/z"}, request{"POST", "/api/v1"},
		request{"GET", "/nope"}, request{"GET", "/ui/nope"}, request{"DELETE", "/api/v1/login"}, request{"PUT", "/api/v1/openapi.json"},
		request{"POST", "/ping"}, request{"DELETE", "/ui/login"}, request{"PATCH", "/api/v1/namespaces/x/apps"})
	seen404, seen405 := false, false
	for _, r := range reqs {
		req, err := http.NewRequest(r.method, p.URL+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // no redirects followed
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		seen404 = seen404 || resp.StatusCode == http.StatusNotFound
		seen405 = seen405 || resp.StatusCode == http.StatusMethodNotAllowed
		h := resp.Header
		want := map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
		if strings.HasPrefix(r.path, "/ui/static/") && (r.method == http.MethodGet || r.method == http.MethodHead) {
			delete(want, "Cache-Control")
		}
		for name, v := range want {
			if got := h.Get(name); got != v {
				t.Errorf("%s %s (%d): want %s %q, got %q", r.method, r.path, resp.StatusCode, name, v, got)
			}
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s %s (%d): want a Content-Security-Policy with frame-ancestors 'none', got %q", r.method, r.path, resp.StatusCode, csp)
		}
	}
	if !seen404 || !seen405 {
		t.Fatalf("want the sample to include a 404 and a 405, saw 404 %v, 405 %v", seen404, seen405)
	}
}
