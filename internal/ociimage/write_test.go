//go:build unix

package ociimage

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func writeTestLayout(t *testing.T) (string, v1.ImageIndex) {
	t.Helper()
	amd, err := Build(spec("amd64 binary"))
	if err != nil {
		t.Fatal(err)
	}
	s := spec("arm64 binary")
	s.Platform.Architecture = "arm64"
	arm, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := Index(amd, arm)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mooring")
	if err := WriteLayout(dir, idx, "example.com/mooring:v1"); err != nil {
		t.Fatal(err)
	}
	return dir, idx
}

// checkModes fails on any file of dir that is not 0644 or directory that is not 0755.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		want := fs.FileMode(0o644)
		if d.IsDir() {
			want = 0o755
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", strings.TrimPrefix(p, dir), st.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("layout has %d entries, want the blobs, index.json, oci-layout", n)
	}
}

// TestLayoutIsReadableByAll: even under a umask of 077 (os.CreateTemp's 0600 blobs were
// the fault), every file of the layout is 0644 and every directory 0755, before and after
// a referrer is attached.
func TestLayoutIsReadableByAll(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir, idx := writeTestLayout(t)
	checkModes(t, dir)

	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AttachReferrer(dir, v1.Descriptor{MediaType: types.OCIImageIndex, Digest: d, Size: 1},
		Artifact{ArtifactType: "text/plain", MediaType: "text/plain", Content: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	checkModes(t, dir)
}

// TestAttachReferrer: an artifact attached to the index is an OCI 1.1 manifest with the
// artifactType, the empty config and the subject, listed in index.json without a ref
// name, and Referrers finds it by its subject only.
func TestAttachReferrer(t *testing.T) {
	dir, idx := writeTestLayout(t)
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := idx.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	subject := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: d, Size: int64(len(raw))}
	art := Artifact{
		ArtifactType: "application/vnd.in-toto+json", MediaType: "application/vnd.dsse.envelope.v1+json",
		Content: []byte(`{"payload":""}`), Annotations: map[string]string{"in-toto.io/predicate-type": "https://slsa.dev/provenance/v1"},
	}
	desc, err := AttachReferrer(dir, subject, art)
	if err != nil {
		t.Fatal(err)
	}
	if desc.ArtifactType != art.ArtifactType {
		t.Errorf("descriptor artifactType %q", desc.ArtifactType)
	}
	refs, err := Referrers(dir, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 {
		t.Fatalf("%d referrers of the index, want 1", len(refs))
	}
	m := refs[0].Manifest
	if m.ArtifactType != art.ArtifactType || m.Config.MediaType != EmptyConfigMediaType || m.Config.Size != 2 ||
		m.Subject == nil || m.Subject.Digest != d || m.Subject.Size != subject.Size || string(refs[0].Content) != string(art.Content) ||
		m.Layers[0].MediaType != art.MediaType || m.Annotations["in-toto.io/predicate-type"] == "" {
		t.Errorf("referrer manifest %+v", m)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if refs, err := Referrers(dir, im.Manifests[0].Digest); err != nil || len(refs) != 0 {
		t.Errorf("referrers of a platform manifest: %d, %v; want none", len(refs), err)
	}

	// The image is still the only entry with a ref name, and still reads as an index.
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, e := range rm.Manifests {
		if e.Annotations[RefNameAnnotation] != "" {
			named++
			if e.Digest != d {
				t.Errorf("named entry %s, want the index %s", e.Digest, d)
			}
		}
	}
	if len(rm.Manifests) != 2 || named != 1 {
		t.Errorf("index.json has %d entries, %d named; want the index (named) and the referrer", len(rm.Manifests), named)
	}

	// A blob changed on disk is refused.
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", m.Layers[0].Digest.Hex), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Referrers(dir, d); err == nil {
		t.Error("a tampered blob was read back without an error")
	}
}
