package nodeimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// fakeMmdebstrap writes a script that stands in for mmdebstrap: it notes each run in a
// file and copies rootfs to its target argument (the one before the apt source), or,
// without a rootfs, fails as mmdebstrap does for an unknown package.
func fakeMmdebstrap(t *testing.T, rootfs []byte) (tool, runs string) {
	t.Helper()
	dir := t.TempDir()
	runs = filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho run >> '" + runs + "'\n"
	if rootfs == nil {
		script += "echo 'I: running apt-get update...'\necho 'E: Unable to locate package memcached' >&2\nexit 1\n"
	} else {
		path := filepath.Join(dir, "rootfs.tar")
		if err := os.WriteFile(path, rootfs, 0o644); err != nil {
			t.Fatal(err)
		}
		script += "eval \"target=\\${$(($# - 1))}\"\ncp '" + path + "' \"$target\"\n"
	}
	tool = filepath.Join(dir, "mmdebstrap")
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return tool, runs
}

func countRuns(t *testing.T, runs string) int {
	t.Helper()
	data, err := os.ReadFile(runs)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "run\n")
}

// cacheLeftovers are the cache directory's entries besides finished archives and lock
// files: what a build must never leave behind.
func cacheLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") && (!strings.HasSuffix(e.Name(), ".tar") || strings.HasPrefix(e.Name(), ".")) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestEnsureBuildsOnceAndCaches(t *testing.T) {
	tool, runs := fakeMmdebstrap(t, debianRootfs(t))
	opts := Options{CacheDir: t.TempDir(), Mirror: "http://m.example/debian", Mmdebstrap: tool}
	s := debianSpec()
	// A build directory a builder left when it died holding the lock.
	stale := filepath.Join(opts.CacheDir, ".build-"+s.Key(opts.Mirror)+"-123")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}

	const builders = 3
	paths := make([]string, builders)
	errs := make([]error, builders)
	var wg sync.WaitGroup
	for i := range builders {
		wg.Go(func() { paths[i], errs[i] = Ensure(t.Context(), s, opts) })
	}
	wg.Wait()
	for i := range builders {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if paths[i] != paths[0] {
			t.Errorf("builders got %s and %s", paths[0], paths[i])
		}
	}
	if want := filepath.Join(opts.CacheDir, s.Key(opts.Mirror)+".tar"); paths[0] != want {
		t.Errorf("archive %s, want %s", paths[0], want)
	}
	if n := countRuns(t, runs); n != 1 {
		t.Errorf("mmdebstrap ran %d times for %d concurrent builders of one image, want once", n, builders)
	}
	if left := cacheLeftovers(t, opts.CacheDir); len(left) > 0 {
		t.Errorf("cache holds %v besides the archive", left)
	}
	names, err := ArchiveNames(paths[0])
	if err != nil || len(names) != 1 || names[0] != s.Ref {
		t.Errorf("archive names %v (%v), want [%s]", names, err, s.Ref)
	}

	if _, err := Ensure(t.Context(), s, opts); err != nil {
		t.Fatal(err)
	}
	if n := countRuns(t, runs); n != 1 {
		t.Errorf("a cached image was built again (%d runs)", n)
	}
}

func TestEnsureFailureLeavesNothing(t *testing.T) {
	tool, _ := fakeMmdebstrap(t, nil)
	opts := Options{CacheDir: t.TempDir(), Mirror: "http://m.example/debian", Mmdebstrap: tool}
	s := debianSpec()
	_, err := Ensure(t.Context(), s, opts)
	want := "nodeimage: building docker.io/library/memcached:1.6: mmdebstrap: Unable to locate package memcached; Debian trixie does not have the packages the catalogue names (memcached); correct the image's Spec"
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	if left := cacheLeftovers(t, opts.CacheDir); len(left) > 0 {
		t.Errorf("a failed build left %v in the cache", left)
	}
	if _, err := os.Stat(filepath.Join(opts.CacheDir, s.Key(opts.Mirror)+".tar")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed build left its archive: %v", err)
	}
}

func TestEnsureWithoutMmdebstrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Ensure(t.Context(), debianSpec(), Options{CacheDir: t.TempDir(), Mirror: DefaultMirror})
	want := "nodeimage: building docker.io/library/memcached:1.6: mmdebstrap not found; install Debian's mmdebstrap package (apt-get install mmdebstrap)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestEnsureAllReportsEveryFailure(t *testing.T) {
	tool, _ := fakeMmdebstrap(t, nil)
	opts := Options{CacheDir: t.TempDir(), Mirror: "http://m.example/debian", Mmdebstrap: tool}
	a, b := debianSpec(), debianSpec()
	b.Ref = "docker.io/library/memcached:1"
	_, err := EnsureAll(t.Context(), []Spec{a, b}, opts)
	var be *BuildError
	if !errors.As(err, &be) || strings.Count(err.Error(), "nodeimage: building ") != 2 {
		t.Errorf("error %v, want one BuildError line per image", err)
	}
}

func TestEnsureBuildsThePauseImageReproducibly(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the Go toolchain is not on PATH; the pause image is built with it")
	}
	s, _ := Find(PauseRef)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := Ensure(ctx, s, Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Ensure(ctx, s, Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(first)
	b, errB := os.ReadFile(second)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds of the pause image differ")
	}

	files := archiveFiles(t, a)
	index := decode[v1.IndexManifest](t, files["index.json"])
	manifest := decode[v1.Manifest](t, files["blobs/sha256/"+index.Manifests[0].Digest.Hex])
	config := decode[v1.ConfigFile](t, files["blobs/sha256/"+manifest.Config.Digest.Hex])
	if c := config.Config; len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/pause" || c.User != "65535:65535" || c.Labels[AnnotationStandIn] != "false" {
		t.Errorf("config %+v, want entrypoint /pause, user 65535:65535, not a stand-in", c)
	}
	zr, err := gzip.NewReader(bytes.NewReader(files["blobs/sha256/"+manifest.Layers[0].Digest.Hex]))
	if err != nil {
		t.Fatal(err)
	}
	entries, order := readLayer(t, zr)
	if len(order) != 1 || order[0] != "pause" || entries["pause"].h.Mode != 0o755 || entries["pause"].h.Typeflag != tar.TypeReg {
		t.Errorf("layer %v, want the one executable /pause", order)
	}
}
