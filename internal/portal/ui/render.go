package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// page is what every template gets: the layout's data plus the page's own in Data.
type page struct {
	Title string
	// User is the logged-in user, nil on the login and register pages.
	User *portalv1alpha1.User
	CSRF string
	// Notice is a success message; Error a failure that concerns the whole page.
	Notice, Error string
	// Poll is the status refresh interval in milliseconds, 0 on pages that do not poll.
	Poll int
	// Refresh, when set, is a local page the browser moves on to at once.
	Refresh string
	Data    any
}

// pageTemplate is one page parsed with the layout.
type pageTemplate = *template.Template

var funcs = template.FuncMap{
	"join": strings.Join,
	"inc":  func(n int) int { return n + 1 },
}

// parsePages parses every page of templates/ together with layout.html and the shared
// partials (partials.html).
func parsePages() (map[string]pageTemplate, error) {
	files, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	var shared, pages []string
	for _, f := range files {
		base := path.Base(f)
		if base == "layout.html" || base == "partials.html" {
			shared = append(shared, f)
		} else {
			pages = append(pages, f)
		}
	}
	out := map[string]pageTemplate{}
	for _, p := range pages {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, append(shared, p)...)
		if err != nil {
			return nil, fmt.Errorf("ui: parse %s: %w", p, err)
		}
		out[strings.TrimSuffix(path.Base(p), ".html")] = t
	}
	return out, nil
}

// render writes the page name with status; the layout wraps it.
func (u *UI) render(c *gin.Context, status int, name string, p page) {
	u.execute(c, status, name, "layout.html", p)
}

func (u *UI) execute(c *gin.Context, status int, name, tmpl string, p page) {
	body, ok := u.build(c, name, tmpl, p)
	if ok {
		c.Data(status, "text/html; charset=utf-8", body)
	}
}

// build renders template tmpl of page name; on failure it answers 500 itself.
func (u *UI) build(c *gin.Context, name, tmpl string, p page) ([]byte, bool) {
	t, ok := u.pages[name]
	if !ok {
		slog.ErrorContext(c.Request.Context(), "No such UI page", "page", name)
		c.String(http.StatusInternalServerError, "internal error")
		return nil, false
	}
	if p.User == nil {
		if cl := caller(c); cl != nil {
			p.User = cl.User
		}
	}
	if p.CSRF == "" {
		p.CSRF = c.GetString(csrfKey)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		slog.ErrorContext(c.Request.Context(), "Rendering a UI page failed", "page", name, "err", err)
		c.String(http.StatusInternalServerError, "internal error")
		return nil, false
	}
	return buf.Bytes(), true
}

// problem is an error as a page shows it: a sentence, and messages by form field path
// (e.g. "spec.replicas") for the fields it names.
type problem struct {
	Status  int
	Message string
	Fields  map[string]string
}

// describe turns a service error into what the page shows. The API server's message
// and field causes pass through, like the API's JSON errors; unknown errors are logged
// and shown as a generic message.
func describe(ctx context.Context, err error) problem {
	p := problem{Fields: map[string]string{}}
	add := func(field, msg string) {
		if field == "" {
			return
		}
		if prev, ok := p.Fields[field]; ok {
			msg = prev + "; " + msg
		}
		p.Fields[field] = msg
	}
	var se *services.Error
	var st apierrors.APIStatus
	switch {
	case errors.As(err, &se):
		p.Message = se.Message
		p.Status = map[services.Kind]int{services.KindInvalid: http.StatusUnprocessableEntity, services.KindUnauthorized: http.StatusUnauthorized,
			services.KindForbidden: http.StatusForbidden, services.KindNotFound: http.StatusNotFound, services.KindConflict: http.StatusConflict,
			services.KindBadRequest: http.StatusBadRequest}[se.Kind]
		for _, f := range se.Fields {
			add(f.Field, f.Message)
		}
	case errors.As(err, &st):
		s := st.Status()
		p.Status, p.Message = int(s.Code), services.StatusMessage(s)
		for _, f := range services.FieldErrors(s) {
			add(f.Field, f.Message)
		}
	case errors.Is(err, context.DeadlineExceeded):
		p.Status, p.Message = http.StatusGatewayTimeout, "The cluster did not answer in time."
	default:
		slog.ErrorContext(ctx, "UI request failed", "err", err)
		p.Status, p.Message = http.StatusInternalServerError, "Internal error; the portal's log has the details."
	}
	if p.Status < 400 || p.Status > 599 {
		p.Status = http.StatusInternalServerError
	}
	return p
}

// badPath answers 400 to a path whose namespace or name is no valid DNS name, as the
// API does, before anything asks the cluster about it.
func (u *UI) badPath(c *gin.Context, param, value string, _ []string) {
	what := map[string]string{"ns": "namespace", "name": "name"}[param]
	u.render(c, http.StatusBadRequest, "error", page{Title: "Bad request", Error: fmt.Sprintf("%q is not a valid %s.", value, what)})
}

// fail renders the error page for err.
func (u *UI) fail(c *gin.Context, err error) {
	p := describe(c.Request.Context(), err)
	u.render(c, p.Status, "error", page{Title: http.StatusText(p.Status), Error: p.Message})
}
