package nodeimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// archiveOf runs the build's steps after mmdebstrap on a synthetic root filesystem and
// returns the archive's bytes.
func archiveOf(t *testing.T, s Spec, rootfs []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	rootfsPath, layerPath := filepath.Join(dir, "rootfs.tar"), filepath.Join(dir, "layer.tar.gz")
	if err := os.WriteFile(rootfsPath, rootfs, 0o644); err != nil {
		t.Fatal(err)
	}
	facts, err := compressLayer(layerPath, rootfsPath, s)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := debianVersions(s, facts)
	if err != nil {
		t.Fatal(err)
	}
	img, err := image(s, layerPath, installed{versions: versions, created: facts.created})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeArchive(&buf, img, s.Ref, facts.created); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// archiveFiles returns an archive's members by name.
func archiveFiles(t *testing.T, archive []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = body
	}
}

func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return v
}

func TestArchiveIsAnOCILayoutNamedForContainerd(t *testing.T) {
	s := debianSpec()
	files := archiveFiles(t, archiveOf(t, s, debianRootfs(t)))

	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"])
	}
	index := decode[v1.IndexManifest](t, files["index.json"])
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(index.Manifests))
	}
	entry := index.Manifests[0]
	if entry.Annotations[AnnotationContainerdName] != s.Ref || entry.Annotations[AnnotationRefName] != s.Ref {
		t.Errorf("index entry annotations %v, want %s and %s both %s", entry.Annotations, AnnotationContainerdName, AnnotationRefName, s.Ref)
	}
	if entry.Platform == nil || entry.Platform.OS != "linux" || entry.Platform.Architecture != runtime.GOARCH {
		t.Errorf("index entry platform %v, want linux/%s", entry.Platform, runtime.GOARCH)
	}

	manifestBlob := files["blobs/sha256/"+entry.Digest.Hex]
	manifest := decode[v1.Manifest](t, manifestBlob)
	config := decode[v1.ConfigFile](t, files["blobs/sha256/"+manifest.Config.Digest.Hex])
	if len(manifest.Layers) != 1 || files["blobs/sha256/"+manifest.Layers[0].Digest.Hex] == nil {
		t.Fatalf("manifest layers %v, want one, in the archive", manifest.Layers)
	}

	want := map[string]string{
		AnnotationDescription:    s.Description,
		AnnotationVersion:        "1.6.38-1",
		AnnotationStandIn:        "true",
		AnnotationRefName:        s.Ref,
		AnnotationCreated:        "2026-12-07T09:30:00Z",
		AnnotationDebianSuite:    "trixie",
		AnnotationDebianPackages: "memcached=1.6.38-1",
	}
	for k, v := range want {
		if manifest.Annotations[k] != v {
			t.Errorf("manifest annotation %s = %q, want %q", k, manifest.Annotations[k], v)
		}
		if config.Config.Labels[k] != v {
			t.Errorf("config label %s = %q, want %q", k, config.Config.Labels[k], v)
		}
	}

	c := config.Config
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "memcached" || c.User != "11211:11211" {
		t.Errorf("config entrypoint %v user %q, want the Spec's", c.Entrypoint, c.User)
	}
	if _, ok := c.ExposedPorts["11211/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 11211/tcp", c.ExposedPorts)
	}
	if !config.Created.Equal(built) {
		t.Errorf("created %s, want the newest file's time %s", config.Created, built)
	}
}

func TestArchiveIsDeterministic(t *testing.T) {
	rootfs := debianRootfs(t)
	first := archiveOf(t, debianSpec(), rootfs)
	if !bytes.Equal(archiveOf(t, debianSpec(), rootfs), first) {
		t.Fatal("one root filesystem and one Spec gave two different archives")
	}
	changes := map[string]func(*Spec){
		"description": func(s *Spec) { s.Description += "." },
		"user":        func(s *Spec) { s.Config.User = "11212:11212" },
		"strip":       func(s *Spec) { s.Strip = s.Strip[1:] },
	}
	for name, change := range changes {
		s := debianSpec()
		change(&s)
		if bytes.Equal(archiveOf(t, s, rootfs), first) {
			t.Errorf("changing the %s kept the archive", name)
		}
	}
}

func TestStandInVersionMustMatchItsTag(t *testing.T) {
	s := debianSpec()
	s.Ref = "docker.io/library/memcached:1.5"
	var layer bytes.Buffer
	facts, err := writeLayer(&layer, bytes.NewReader(debianRootfs(t)), s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = debianVersions(s, facts)
	var be *BuildError
	if !errors.As(err, &be) || be.Ref != s.Ref || !bytes.Contains([]byte(be.Cause), []byte("1.6.38-1, not the 1.5")) {
		t.Errorf("error %v, want a BuildError saying Debian's 1.6.38-1 is not the tag's 1.5", err)
	}
	s.Ref = "docker.io/library/memcached:1.6"
	s.Debian.Packages = []string{"memcached", "libmemcached-tools"}
	if _, err := debianVersions(s, facts); err == nil {
		t.Error("a package missing from dpkg's status passed")
	}
}
