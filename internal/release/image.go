package release

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/mooringhq/mooring/internal/ociimage"
)

// Image is one of Mooring's images: a Go main package and where it is published.
type Image struct {
	// Name is the binary's name (installed as /<Name>, the entrypoint) and the layout's
	// directory name.
	Name string
	// Package is the Go main package, e.g. ./cmd/mooring.
	Package string
	// Repository is where the image is pushed, e.g. ghcr.io/mooringhq/mooring.
	Repository string
	// Description is the org.opencontainers.image.description label.
	Description string
}

// Images are the images a release ships. The operator's binary is also the database pods'
// instance manager: their init container copies /mooring out of the operator's image, so
// it stays a static executable at that path.
var Images = []Image{
	{
		Name: "mooring", Package: "./cmd/mooring", Repository: "ghcr.io/mooringhq/mooring",
		Description: "Mooring, a Kubernetes operator for Apps, caches, databases and backups",
	},
	{
		Name: "mooring-portal", Package: "./cmd/mooring-portal", Repository: "ghcr.io/mooringhq/mooring-portal",
		Description: "The Mooring portal, a REST API for Mooring's users, roles and objects",
	},
}

// Labels are the image config's org.opencontainers.image.* labels.
func Labels(img Image, src Source) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       img.Name,
		"org.opencontainers.image.source":      "https://github.com/mooringhq/mooring",
		"org.opencontainers.image.url":         "https://github.com/mooringhq/mooring",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.vendor":      "Mooring",
		"org.opencontainers.image.version":     src.Version,
		"org.opencontainers.image.revision":    src.Revision,
		"org.opencontainers.image.created":     src.Created.Format(time.RFC3339),
		"org.opencontainers.image.description": img.Description,
	}
}

// Built is one platform's image and what its binary was built from.
type Built struct {
	Platform  v1.Platform
	Image     v1.Image
	BuildInfo *debug.BuildInfo
}

// Layout is an image index written as an OCI layout.
type Layout struct {
	// Dir is the layout's directory.
	Dir string
	// Ref is the image reference its index.json names (<repository>:<version>).
	Ref   string
	Index v1.ImageIndex
	// Images are the per-platform images, in the order of the platforms asked for.
	Images []Built
}

// BuildLayout compiles img.Package for each platform, builds an image of each binary and
// writes their index as an OCI layout in <out>/<img.Name>, named <repository>:<tag>
// (tag is src.Version when empty).
func BuildLayout(img Image, platforms []v1.Platform, src Source, tag, out string) (Layout, error) {
	if tag == "" {
		tag = src.Version
	}
	l := Layout{Dir: filepath.Join(out, img.Name), Ref: img.Repository + ":" + tag}
	images := make([]v1.Image, 0, len(platforms))
	for _, plat := range platforms {
		bin, err := Compile(img.Package, plat, src)
		if err != nil {
			return l, err
		}
		bi, err := buildinfo.Read(bytes.NewReader(bin))
		if err != nil {
			return l, fmt.Errorf("build information of %s for %s: %w", img.Package, plat, err)
		}
		oi, err := ociimage.Build(ociimage.Spec{Name: img.Name, Binary: bin, Platform: plat, Created: src.Created, Labels: Labels(img, src)})
		if err != nil {
			return l, err
		}
		images = append(images, oi)
		l.Images = append(l.Images, Built{Platform: plat, Image: oi, BuildInfo: bi})
	}
	idx, err := ociimage.Index(images...)
	if err != nil {
		return l, err
	}
	l.Index = idx
	if err := os.MkdirAll(out, 0o755); err != nil {
		return l, err
	}
	return l, ociimage.WriteLayout(l.Dir, idx, l.Ref)
}

// ParsePlatforms parses os/arch[/variant] platforms.
func ParsePlatforms(names []string) ([]v1.Platform, error) {
	out := make([]v1.Platform, 0, len(names))
	for _, n := range names {
		p, err := v1.ParsePlatform(n)
		if err != nil {
			return nil, err
		}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", n)
		}
		out = append(out, *p)
	}
	return out, nil
}
