// Package validate checks HTTP exchanges against the portal's OpenAPI document; the
// portal's tests run every request and response they make through it.
package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/mooringhq/mooring/internal/portal/openapi"
)

// Validator checks requests and responses against the document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// New loads and validates the document itself.
func New() (*Validator, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON())
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", openapi.GeneratedFile, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("%s is not a valid OpenAPI document: %w", openapi.GeneratedFile, err)
	}
	// Match any host: tests serve on random ports.
	doc.Servers = openapi3.Servers{{URL: "/"}}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", openapi.GeneratedFile, err)
	}
	return &Validator{doc: doc, router: r}, nil
}

// Exchange validates a request (with its body) and the response it got.
func (v *Validator) Exchange(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	r := req.Clone(context.Background())
	r.URL = &url.URL{Path: req.URL.Path, RawQuery: req.URL.RawQuery}
	r.Host = ""
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := v.router.FindRoute(r)
	if err != nil {
		// The document says a path it does not list answers 404, and a method it does not
		// list for a path 405, with an error body.
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return v.errorBody(respBody)
		}
		return fmt.Errorf("%s %s is not in the OpenAPI document: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	// Requests the portal refused on purpose (bad input) need not match the schema; the
	// answer to them must.
	if resp.StatusCode < 400 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("request %s %s does not match the document: %w", req.Method, req.URL.Path, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
		Header: resp.Header, Body: io.NopCloser(bytes.NewReader(respBody)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("response %d to %s %s does not match the document: %w", resp.StatusCode, req.Method, req.URL.Path, err)
	}
	return nil
}

// errorBody checks body against the document's Error schema.
func (v *Validator) errorBody(body []byte) error {
	var data any
	if err := json.Unmarshal(body, &data); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	if err := v.doc.Components.Schemas["Error"].Value.VisitJSON(data); err != nil {
		return fmt.Errorf("error body does not match the Error schema: %w", err)
	}
	return nil
}

// Transport is an http.RoundTripper that validates every exchange and records the
// first mismatch in Err (tests fail on it).
type Transport struct {
	V    *Validator
	Base http.RoundTripper
	// OnError receives every mismatch.
	OnError func(error)
}

// RoundTrip sends req and validates the exchange.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	// /metrics is Prometheus text, not part of the JSON API.
	if req.URL.Path != "/metrics" {
		if verr := t.V.Exchange(req, reqBody, resp, respBody); verr != nil && t.OnError != nil {
			t.OnError(verr)
		}
	}
	return resp, nil
}
