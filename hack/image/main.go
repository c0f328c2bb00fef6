// Command image builds the OCI image of one of Mooring's binaries without Docker: it
// compiles the package statically (CGO_ENABLED=0, -trimpath, no build id) for each
// platform, puts the binary on an empty base as user 65532 (internal/ociimage), and
// writes an OCI layout (<out>/<name>) and, for a single platform, a `docker load`-able
// tarball (<out>/<name>.tar). Two runs on one commit give the same digest: every
// timestamp is the commit time.
//
//	go run ./hack/image --package ./cmd/mooring --name mooring --out bin/image
//	go run ./hack/image --package ./cmd/mooring-portal --name mooring-portal \
//	    --repository ghcr.io/mooringhq/mooring-portal --out bin/image
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/mooringhq/mooring/internal/ociimage"
)

func main() {
	var (
		pkg, name, out, repo, tag, platforms, description string
	)
	flag.StringVar(&pkg, "package", "./cmd/mooring", "Go main package to build.")
	flag.StringVar(&name, "name", "mooring", "Binary and image name.")
	flag.StringVar(&out, "out", "bin/image", "Output directory.")
	flag.StringVar(&repo, "repository", "ghcr.io/mooringhq/mooring", "Repository the image is tagged for.")
	flag.StringVar(&tag, "tag", "", "Tag; the version from git describe when empty.")
	flag.StringVar(&description, "description", "Mooring, a Kubernetes operator for Apps, caches, databases and backups", "org.opencontainers.image.description label.")
	flag.StringVar(&platforms, "platforms", "linux/"+runtime.GOARCH, "Comma-separated platforms, e.g. linux/amd64,linux/arm64.")
	flag.Parse()
	if err := run(pkg, name, out, repo, tag, description, strings.Split(platforms, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(pkg, name, out, repo, tag, description string, platforms []string) error {
	src, err := sourceInfo()
	if err != nil {
		return err
	}
	if tag == "" {
		tag = src.version
	}
	ref := repo + ":" + tag
	labels := map[string]string{
		"org.opencontainers.image.title":       name,
		"org.opencontainers.image.source":      "https://github.com/mooringhq/mooring",
		"org.opencontainers.image.url":         "https://github.com/mooringhq/mooring",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.vendor":      "Mooring",
		"org.opencontainers.image.version":     tag,
		"org.opencontainers.image.revision":    src.revision,
		"org.opencontainers.image.created":     src.created.Format(time.RFC3339),
		"org.opencontainers.image.description": description,
	}
	var images []v1.Image
	for _, p := range platforms {
		plat, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return err
		}
		bin, err := compile(pkg, *plat)
		if err != nil {
			return err
		}
		img, err := ociimage.Build(ociimage.Spec{Name: name, Binary: bin, Platform: *plat, Created: src.created, Labels: labels})
		if err != nil {
			return err
		}
		images = append(images, img)
	}
	idx, err := ociimage.Index(images...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := ociimage.WriteLayout(filepath.Join(out, name), idx, ref); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image: %s index %s (OCI layout %s)\n", ref, digest, filepath.Join(out, name))
	if len(images) == 1 {
		if err := ociimage.WriteTarball(filepath.Join(out, name+".tar"), images[0], ref); err != nil {
			return err
		}
		d, err := images[0].Digest()
		if err != nil {
			return err
		}
		fmt.Printf("image: %s manifest %s (docker load -i %s)\n", ref, d, filepath.Join(out, name+".tar"))
	}
	return nil
}

// compile builds pkg statically for plat and returns the binary.
func compile(pkg string, plat v1.Platform) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "mooring-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bin := filepath.Join(tmp, "bin")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+plat.OS, "GOARCH="+plat.Architecture, "GOFLAGS=")
	if plat.Architecture == "arm" && plat.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(plat.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %w", pkg, plat, err)
	}
	return os.ReadFile(bin)
}

type source struct {
	revision, version string
	created           time.Time
}

// sourceInfo reads the commit, its time and a version from git; SOURCE_DATE_EPOCH, when
// set, overrides the time (the reproducible-builds convention).
func sourceInfo() (source, error) {
	s := source{revision: "unknown", version: "dev", created: time.Unix(0, 0).UTC()}
	if out, err := git("rev-parse", "HEAD"); err == nil {
		s.revision = out
	}
	if out, err := git("describe", "--tags", "--always", "--dirty"); err == nil {
		s.version = out
	}
	if out, err := git("log", "-1", "--format=%ct"); err == nil {
		sec, err := strconv.ParseInt(out, 10, 64)
		if err != nil {
			return s, fmt.Errorf("commit time %q: %w", out, err)
		}
		s.created = time.Unix(sec, 0).UTC()
	}
	if env := os.Getenv("SOURCE_DATE_EPOCH"); env != "" {
		sec, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			return s, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", env, err)
		}
		s.created = time.Unix(sec, 0).UTC()
	}
	return s, nil
}

func git(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("git", args...)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}
