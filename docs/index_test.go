package docs

import (
	"path"
	"strings"
	"testing"
)

// index is the docs index: one line per page of docs/.
const index = "docs/README.md"

// TestIndexHasOneLinePerPage fails when a page of docs/ has no line in the index
// (docs/README.md), or more than one. A line is a list item whose first link names the
// page. The runbooks have their own index (docs/runbooks/README.md), which has a line here.
func TestIndexHasOneLinePerPage(t *testing.T) {
	idx, err := readPage(root, index)
	if err != nil {
		t.Fatalf("%s: %v (the docs index: one line per page of docs/)", index, err)
	}
	lines := map[string]int{} // page -> index lines naming it first
	for _, line := range idx.prose {
		item, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		m := link.FindStringSubmatch(item)
		if m == nil || !strings.HasPrefix(item, m[0]) {
			continue
		}
		file, _, _ := strings.Cut(m[1], "#")
		lines[path.Clean(path.Join(path.Dir(index), file))]++
	}
	checked := 0
	for _, p := range pages(t) {
		if !strings.HasPrefix(p.path, "docs/") || p.path == index {
			continue
		}
		if strings.HasPrefix(p.path, "docs/runbooks/") && p.path != "docs/runbooks/README.md" {
			continue // indexed by the runbooks' own index
		}
		checked++
		switch n := lines[p.path]; {
		case n == 0:
			t.Errorf("%s has no line in %s: add \"- [%s](%s): what it holds\"", p.path, index, path.Base(p.path), strings.TrimPrefix(p.path, "docs/"))
		case n > 1:
			t.Errorf("%s has %d lines in %s, want one", p.path, n, index)
		}
	}
	if checked == 0 {
		t.Fatal("no pages under docs/ found: is the test run from the docs directory?")
	}
}
