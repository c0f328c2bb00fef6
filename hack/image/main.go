// Command image builds the OCI image of one of Mooring's binaries without Docker: it
// compiles the package statically (CGO_ENABLED=0, -trimpath, no build id, the version and
// commit linked into internal/version) for each platform, puts the binary on an empty base
// with a CA bundle, as user 65532 (internal/ociimage), and writes an OCI layout
// (<out>/<name>) and, for a single platform, a `docker load`-able tarball (<out>/<name>.tar).
// Two runs on one commit give the same digest: every timestamp is the commit time.
// `make release` (hack/release) builds the same images with SBOMs and signed provenance.
//
//	go run ./hack/image --package ./cmd/mooring --name mooring --out bin/image
//	go run ./hack/image --package ./cmd/mooring-portal --name mooring-portal \
//	    --repository ghcr.io/mooringhq/mooring-portal --out bin/image
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/mooringhq/mooring/internal/ociimage"
	"github.com/mooringhq/mooring/internal/release"
)

func main() {
	var (
		img                     release.Image
		out, tag, platforms, vs string
	)
	flag.StringVar(&img.Package, "package", "./cmd/mooring", "Go main package to build.")
	flag.StringVar(&img.Name, "name", "mooring", "Binary and image name.")
	flag.StringVar(&out, "out", "bin/image", "Output directory.")
	flag.StringVar(&img.Repository, "repository", "ghcr.io/mooringhq/mooring", "Repository the image is tagged for.")
	flag.StringVar(&vs, "version", "", "Version linked into the binary (internal/version.Version) and the org.opencontainers.image.version label; git describe --tags --always --dirty when empty.")
	flag.StringVar(&tag, "tag", "", "Tag; the version when empty.")
	flag.StringVar(&img.Description, "description", "Mooring, a Kubernetes operator for Apps, caches, databases and backups", "org.opencontainers.image.description label.")
	flag.StringVar(&platforms, "platforms", "linux/"+runtime.GOARCH, "Comma-separated platforms, e.g. linux/amd64,linux/arm64.")
	flag.Parse()
	if err := run(img, vs, tag, out, strings.Split(platforms, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run builds img for platforms into out; version and tag default to git describe.
func run(img release.Image, version, tag, out string, platforms []string) error {
	src, err := release.ReadSource()
	if err != nil {
		return err
	}
	if version != "" {
		src.Version = version
	}
	plats, err := release.ParsePlatforms(platforms)
	if err != nil {
		return err
	}
	l, err := release.BuildLayout(img, plats, src, tag, out)
	if err != nil {
		return err
	}
	digest, err := l.Index.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image: %s index %s (OCI layout %s; version %s, revision %s)\n", l.Ref, digest, l.Dir, src.Version, src.Revision)
	if len(l.Images) == 1 {
		tarball := filepath.Join(out, img.Name+".tar")
		if err := ociimage.WriteTarball(tarball, l.Images[0].Image, l.Ref); err != nil {
			return err
		}
		d, err := l.Images[0].Image.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("image: %s manifest %s (docker load -i %s)\n", l.Ref, d, tarball)
	}
	return nil
}
