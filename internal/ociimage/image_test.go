package ociimage

import (
	"archive/tar"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func spec(binary string) Spec {
	return Spec{
		Name:     "mooring",
		Binary:   []byte(binary),
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Created:  time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC),
		Labels:   map[string]string{"org.opencontainers.image.revision": "abc"},
	}
}

func digest(t *testing.T, s Spec) v1.Hash {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBuildIsReproducible(t *testing.T) {
	first := digest(t, spec("binary"))
	if again := digest(t, spec("binary")); again != first {
		t.Fatalf("two builds of one input differ: %s, %s", first, again)
	}
	changes := map[string]func(*Spec){
		"binary":   func(s *Spec) { s.Binary = []byte("other") },
		"created":  func(s *Spec) { s.Created = s.Created.Add(time.Second) },
		"label":    func(s *Spec) { s.Labels = map[string]string{"org.opencontainers.image.revision": "def"} },
		"platform": func(s *Spec) { s.Platform.Architecture = "arm64" },
	}
	for name, change := range changes {
		s := spec("binary")
		change(&s)
		if d := digest(t, s); d == first {
			t.Errorf("changing the %s kept digest %s", name, d)
		}
	}
}

func TestBuildRunsAsNonRoot(t *testing.T) {
	s := spec("binary")
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/mooring" {
		t.Errorf("config user %q entrypoint %v, want 65532:65532 and [/mooring]", cf.Config.User, cf.Config.Entrypoint)
	}
	if cf.Config.Labels["org.opencontainers.image.revision"] != "abc" || !cf.Created.Equal(s.Created) {
		t.Errorf("labels %v created %s, want the spec's", cf.Config.Labels, cf.Created)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || len(m.Layers) != 1 {
		t.Errorf("manifest %s with %d layers, want one OCI layer", m.MediaType, len(m.Layers))
	}

	files := map[string]*tar.Header{}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
	}
	bin := files["mooring"]
	if bin == nil || bin.Mode != 0o755 || bin.Uid != 0 || bin.Size != int64(len("binary")) || !bin.ModTime.Equal(s.Created) {
		t.Errorf("binary entry %+v, want root-owned 0755 at the commit time", bin)
	}
	if tmp := files["tmp"]; tmp == nil || tmp.Mode != 0o1777 {
		t.Errorf("tmp/ entry %+v, want mode 1777", tmp)
	}
	if home := files["home/nonroot"]; home == nil || home.Uid != NonRoot {
		t.Errorf("home/nonroot/ entry %+v, want owned by %d", home, NonRoot)
	}
	for _, f := range []string{"etc/passwd", "etc/group"} {
		if files[f] == nil {
			t.Errorf("%s missing", f)
		}
	}
}

func TestBuildRejectsBadSpecs(t *testing.T) {
	bad := map[string]func(*Spec){
		"path in name": func(s *Spec) { s.Name = "bin/mooring" },
		"no binary":    func(s *Spec) { s.Binary = nil },
		"no platform":  func(s *Spec) { s.Platform = v1.Platform{} },
	}
	for name, change := range bad {
		s := spec("binary")
		change(&s)
		if _, err := Build(s); err == nil {
			t.Errorf("%s: built, want an error", name)
		}
	}
}
