package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Options say where images are cached and what builds them. The zero value builds with
// the tools on PATH from the machine's apt mirror into DefaultCacheDir.
type Options struct {
	// CacheDir holds the built archives; empty is DefaultCacheDir().
	CacheDir string
	// Mirror is the Debian mirror's URI; empty is AptMirror().
	Mirror string
	// Mmdebstrap and Go are the tools' paths; empty looks them up on PATH.
	Mmdebstrap, Go string
	// Log, when set, receives a line per image built and the build tools' output.
	Log io.Writer
}

// DefaultCacheDir is $MOORING_IMAGE_CACHE, else mooring/images in the user's cache
// directory ($XDG_CACHE_HOME, else ~/.cache): outside any checkout, so that every clone
// on the machine, and CI's fresh one, finds the images already built.
func DefaultCacheDir() string {
	if dir := os.Getenv("MOORING_IMAGE_CACHE"); dir != "" {
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = filepath.Join(os.TempDir(), "mooring-cache")
	}
	return filepath.Join(base, "mooring", "images")
}

func (o Options) withDefaults() Options {
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Mirror == "" {
		o.Mirror = AptMirror()
	}
	return o
}

// Ensure returns the path of s's image archive, building it first unless the cache
// holds it already. Builders of one image, in this process or another, wait for each
// other and build it once; a failed build leaves nothing behind and returns a
// *BuildError.
func Ensure(ctx context.Context, s Spec, opts Options) (archivePath string, err error) {
	o := opts.withDefaults()
	if err := s.Validate(); err != nil {
		return "", &BuildError{Ref: s.Ref, Cause: err.Error(), Fix: "correct the image's Spec"}
	}
	key := s.Key(o.Mirror)
	archive := filepath.Join(o.CacheDir, key+".tar")
	if exists(archive) {
		return archive, nil
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return "", &BuildError{Ref: s.Ref, Cause: err.Error(), Fix: "set MOORING_IMAGE_CACHE to a writable directory"}
	}
	unlock, err := lock(ctx, filepath.Join(o.CacheDir, key+".lock"))
	if err != nil {
		return "", &BuildError{Ref: s.Ref, Cause: "lock the cache: " + err.Error()}
	}
	defer unlock()
	// Whoever held the lock before may have built it.
	if exists(archive) {
		return archive, nil
	}
	// A build directory can only be left over by a builder that died holding this lock.
	stale, _ := filepath.Glob(filepath.Join(o.CacheDir, ".build-"+key+"-*"))
	for _, dir := range stale {
		_ = os.RemoveAll(dir)
	}
	work, err := os.MkdirTemp(o.CacheDir, ".build-"+key+"-")
	if err != nil {
		return "", &BuildError{Ref: s.Ref, Cause: err.Error(), Fix: "set MOORING_IMAGE_CACHE to a writable directory"}
	}
	defer func() { _ = os.RemoveAll(work) }()

	start := time.Now()
	logf(o.Log, "nodeimage: building %s (%s)\n", s.Ref, s.Description)
	if err := build(ctx, s, o, work, archive); err != nil {
		return "", err
	}
	if fi, err := os.Stat(archive); err == nil {
		logf(o.Log, "nodeimage: built %s in %s, %.1f MB\n", s.Ref, time.Since(start).Round(100*time.Millisecond), float64(fi.Size())/1e6)
	}
	return archive, nil
}

// maxParallelBuilds bounds EnsureAll: an mmdebstrap run keeps about one core busy
// (dpkg, maintainer scripts, gzip), and the machines this runs on have two.
const maxParallelBuilds = 2

// EnsureAll ensures every spec, at most two builds at a time, and returns their archives
// in specs' order. Its error joins one *BuildError per image that failed; the others are
// built all the same.
func EnsureAll(ctx context.Context, specs []Spec, opts Options) ([]string, error) {
	opts = opts.withDefaults() // once, not per image: AptMirror reads files
	archives := make([]string, len(specs))
	errs := make([]error, len(specs))
	slots := make(chan struct{}, maxParallelBuilds)
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			archives[i], errs[i] = Ensure(ctx, s, opts)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return archives, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		_, _ = fmt.Fprintf(w, format, args...)
	}
}
