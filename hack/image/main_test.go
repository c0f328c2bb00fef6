package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/mooringhq/mooring/internal/release"
)

// TestImageIsReproducible runs the whole pipeline (go build, image, OCI layout, tarball)
// twice on one commit, into different directories, and expects one digest. A small main
// package stands in for the operator to keep the test fast. (That the Go toolchain itself
// compiles identical binaries with these flags was checked by running this test with
// t.Setenv("GOCACHE", t.TempDir()) before the second build: same digest, but 75 s, too
// slow for make test.)
func TestImageIsReproducible(t *testing.T) {
	var digests []string
	for range 2 {
		out := t.TempDir()
		img := release.Image{Name: "hello", Package: "./testdata/hello", Repository: "example.com/hello", Description: "hello"}
		if err := run(img, "v0.0.0-test", "test", out, []string{"linux/amd64"}); err != nil {
			t.Fatal(err)
		}
		p, err := layout.FromPath(filepath.Join(out, "hello"))
		if err != nil {
			t.Fatal(err)
		}
		idx, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 {
			t.Fatalf("layout has %d manifests, want 1", len(m.Manifests))
		}
		d := m.Manifests[0].Digest
		if st, err := os.Stat(filepath.Join(out, "hello.tar")); err != nil || st.Size() == 0 {
			t.Fatalf("tarball: %v", err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds of one commit gave %s and %s", digests[0], digests[1])
	}
}
