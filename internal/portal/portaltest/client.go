// Package portaltest drives a portal over real HTTP for tests: every exchange is
// checked against the OpenAPI document, and helpers register, log in and grant roles.
package portaltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/openapi/validate"
)

// Client talks to one portal at URL.
type Client struct {
	T    testing.TB
	URL  string
	HTTP *http.Client
}

// New returns a Client whose exchanges fail t when they do not match the document.
func New(t testing.TB, url string, v *validate.Validator) *Client {
	return &Client{T: t, URL: url, HTTP: &http.Client{Timeout: time.Minute, Transport: &validate.Transport{V: v, OnError: func(err error) {
		t.Errorf("OpenAPI: %v", err)
	}}}}
}

// Reply is an answer of the portal.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode decodes the body into v.
func (r Reply) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Error decodes an error answer.
func (r Reply) Error(t testing.TB) models.ErrorBody {
	t.Helper()
	var e models.ErrorResponse
	r.Decode(t, &e)
	return e.Error
}

// Do sends a request; body is JSON-encoded unless it is a string or []byte.
func (c *Client) Do(method, path, token string, body any) Reply {
	c.T.Helper()
	r, err := c.TryDo(method, path, token, body)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// TryDo is Do returning transport errors instead of failing.
func (c *Client) TryDo(method, path, token string, body any) (Reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return Reply{}, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		return Reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// Expect fails unless r has status want.
func Expect(t testing.TB, r Reply, want int, what string) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: want %d, got %d: %s", what, want, r.Status, r.Body)
	}
}

var seq atomic.Int64

// UniqueName returns a fresh username starting with prefix.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, seq.Add(1))
}

// Register makes an account and returns it with its password.
func (c *Client) Register(prefix string) (models.User, string) {
	c.T.Helper()
	name, pw := UniqueName(prefix), "correct horse battery "+prefix
	r := c.Do("POST", "/api/v1/users", "", models.RegisterRequest{Username: name, Email: name + "@example.com", Password: pw})
	Expect(c.T, r, http.StatusCreated, "register "+name)
	var u models.User
	r.Decode(c.T, &u)
	return u, pw
}

// Login returns the token pair of username.
func (c *Client) Login(username, password string) models.TokenResponse {
	c.T.Helper()
	r := c.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: username, Password: password})
	Expect(c.T, r, http.StatusOK, "login "+username)
	var tok models.TokenResponse
	r.Decode(c.T, &tok)
	return tok
}

// Grant sets a user's role (and a developer's namespaces) with an admin's token.
func (c *Client) Grant(adminToken, id, role string, namespaces ...string) models.User {
	c.T.Helper()
	req := models.UpdateUserRequest{Role: &role}
	if namespaces != nil {
		req.Namespaces = &namespaces
	}
	r := c.Do("PATCH", "/api/v1/users/"+id, adminToken, req)
	Expect(c.T, r, http.StatusOK, "grant "+role)
	var u models.User
	r.Decode(c.T, &u)
	return u
}

// App is a minimal App body named name.
func App(name string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": 1, "port": 80},
	}
}

// Refresh presents a refresh token; the caller checks the answer.
func (c *Client) Refresh(refreshToken string) Reply {
	c.T.Helper()
	return c.Do("POST", "/api/v1/token/refresh", "", models.RefreshRequest{RefreshToken: refreshToken})
}

// Tokens decodes a 200 answer of login or refresh, failing otherwise.
func (r Reply) Tokens(t testing.TB, what string) models.TokenResponse {
	t.Helper()
	Expect(t, r, http.StatusOK, what)
	var tok models.TokenResponse
	r.Decode(t, &tok)
	return tok
}

// WatchDelay bounds how long a logout, revocation or password change made on one
// replica takes to end the session on another: the delay of the watch of Users that
// authentication reads (docs/performance.md), with room for a loaded test machine.
const WatchDelay = 10 * time.Second

// ExpectEnded waits until c refuses the access token (401), as a change made on another
// replica reaches c through its watch of Users; what says which token it is.
func (c *Client) ExpectEnded(t testing.TB, token, what string) {
	t.Helper()
	testutil.Eventually(t, WatchDelay, what+" refused", func() error {
		r, err := c.TryDo("GET", "/api/v1/users/me", token, nil)
		if err != nil {
			return err
		}
		if r.Status != http.StatusUnauthorized {
			return fmt.Errorf("GET /api/v1/users/me answered %d, want 401", r.Status)
		}
		return nil
	})
}
