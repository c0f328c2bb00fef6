package docs

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, seen from this package's directory.
const root = ".."

// pages returns README.md, CHANGELOG.md and every Markdown page under docs/, relative
// to the root.
func pages(t *testing.T) []page {
	t.Helper()
	rels := []string{"README.md", "CHANGELOG.md"}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rels = append(rels, path.Join("docs", filepath.ToSlash(p)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []page
	for _, rel := range rels {
		p, err := readPage(root, rel)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestRelativeLinksResolve fails on a link of README.md, CHANGELOG.md or a page of docs/
// that names a file that does not exist, or a heading its target page does not have.
func TestRelativeLinksResolve(t *testing.T) {
	all := pages(t)
	byPath := map[string]page{}
	for _, p := range all {
		byPath[p.path] = p
	}
	checked := 0
	for _, p := range all {
		for _, target := range p.links() {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := p.path
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(p.path), file))
			}
			checked++
			if strings.HasPrefix(dest, "../") {
				t.Errorf("%s: link %q leaves the repository", p.path, target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
				t.Errorf("%s: link %q: %s does not exist", p.path, target, dest)
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			to, ok := byPath[dest]
			if !ok {
				var err error
				if to, err = readPage(root, dest); err != nil {
					t.Fatal(err)
				}
			}
			if !to.anchors()[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s (it has %v)",
					p.path, target, dest, anchor, sortedKeys(to.anchors()))
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d relative links; the link pattern no longer finds README.md's",
			checked)
	}
}

// TestEveryPageIsLinkedFromREADME fails when a page of docs/ is not linked from README.md
// (a runbook: from the runbooks' index, docs/runbooks/README.md, which README.md links).
func TestEveryPageIsLinkedFromREADME(t *testing.T) {
	const runbooks = "docs/runbooks/"
	all := pages(t)
	linkedFrom := map[string]map[string]bool{} // target page -> pages linking it
	for _, p := range all {
		for _, target := range p.links() {
			file, _, _ := strings.Cut(target, "#")
			if file == "" || strings.Contains(file, "://") {
				continue
			}
			dest := path.Clean(path.Join(path.Dir(p.path), file))
			if linkedFrom[dest] == nil {
				linkedFrom[dest] = map[string]bool{}
			}
			linkedFrom[dest][p.path] = true
		}
	}
	for _, p := range all {
		from := "README.md"
		if strings.HasPrefix(p.path, runbooks) && p.path != runbooks+"README.md" {
			from = runbooks + "README.md"
		}
		if p.path != "README.md" && !linkedFrom[p.path][from] {
			t.Errorf("%s is not linked from %s: add a line for it there", p.path, from)
		}
	}
}

// TestMakeTargetsExist fails when README.md, CHANGELOG.md or a page of docs/ names a
// `make <target>` that the Makefile does not define.
func TestMakeTargetsExist(t *testing.T) {
	targets, err := makefileTargets(root)
	if err != nil {
		t.Fatal(err)
	}
	if !targets["test"] || !targets["run"] {
		t.Fatalf("found only %v in the Makefile; its rule pattern no longer matches",
			sortedKeys(targets))
	}
	named := 0
	for _, p := range pages(t) {
		for _, target := range p.makeTargets() {
			named++
			if !targets[target] {
				t.Errorf("%s names `make %s`, which the Makefile does not define", p.path, target)
			}
		}
	}
	if named < 10 {
		t.Fatalf("found only %d make commands in the docs; the command pattern no longer finds "+
			"README.md's", named)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
