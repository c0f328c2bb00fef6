package server_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// userPage is GET /api/v1/users decoded without the models' types, so the test reads
// what is on the wire (metadata.continue) whatever the Go types say.
type userPage struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []models.User `json:"items"`
}

// TestUsersListIsPaged: GET /api/v1/users takes limit and continue as the object lists
// do. Pages of two, followed to the end, hold every user once, in username order, and
// the unpaged list is the same users. (Before, limit was ignored: the first page held
// every user and said nothing of a next one.)
func TestUsersListIsPaged(t *testing.T) {
	p := newPortal(t, nil)
	tok := p.adminToken()
	var mine []string
	for range 5 {
		u, _ := p.Register("paged")
		mine = append(mine, u.Username)
	}

	list := func(query string) userPage {
		t.Helper()
		r := p.Do("GET", "/api/v1/users"+query, tok, nil)
		portaltest.Expect(t, r, http.StatusOK, "list users "+query)
		var l userPage
		r.Decode(t, &l)
		return l
	}
	var paged []string
	next, pages := "", 0
	for {
		q := url.Values{"limit": {"2"}}
		if next != "" {
			q.Set("continue", next)
		}
		l := list("?" + q.Encode())
		pages++
		if len(l.Items) > 2 {
			t.Fatalf("page %d: want at most 2 users with limit=2, got %d", pages, len(l.Items))
		}
		for _, u := range l.Items {
			paged = append(paged, u.Username)
		}
		if next = l.Metadata.Continue; next == "" {
			break
		}
		if pages > 1000 {
			t.Fatalf("still a next page after %d pages: the continue token does not move on", pages)
		}
	}
	if pages < 3 {
		t.Fatalf("want at least 3 pages of 2 for %d users, got %d", len(paged), pages)
	}
	if !slices.IsSorted(paged) || len(slices.Compact(slices.Clone(paged))) != len(paged) {
		t.Fatalf("want every user once in username order over the pages, got %v", paged)
	}
	for _, name := range mine {
		if !slices.Contains(paged, name) {
			t.Fatalf("user %s is on no page: %v", name, paged)
		}
	}
	var all []string
	whole := list("")
	for _, u := range whole.Items {
		all = append(all, u.Username)
	}
	if !slices.Equal(all, paged) || whole.Metadata.Continue != "" {
		t.Fatalf("the unpaged list %v (continue %q) is not the pages' users %v", all, whole.Metadata.Continue, paged)
	}

	// A token that is none passes to the API server, which refuses it: 400, not 500.
	r := p.Do("GET", "/api/v1/users?limit=2&continue=not-a-token", tok, nil)
	portaltest.Expect(t, r, http.StatusBadRequest, "a continue that is no token")

	for _, bad := range []string{"0", "501", "x"} {
		r := p.Do("GET", "/api/v1/users?limit="+bad, tok, nil)
		portaltest.Expect(t, r, http.StatusBadRequest, "limit="+bad)
		if e := r.Error(t); len(e.Fields) != 1 || e.Fields[0].Field != "limit" {
			t.Fatalf("limit=%s: want a field error naming limit, got %+v", bad, e)
		}
	}
}
