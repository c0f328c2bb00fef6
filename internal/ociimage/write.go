package ociimage

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index joins per-platform images into one OCI image index.
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := cf.Platform()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return idx, nil
}

// RefNameAnnotation names an index.json entry, as `oci:<dir>:<tag>` references it.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes idx as an OCI image layout in dir (replacing what was there), its
// manifest annotated with ref so that tools such as skopeo or crane can push it by name.
// Every file is mode 0644 and every directory 0755, whatever the umask: the layout is
// often built by one user and pushed or imported by another.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("create layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		RefNameAnnotation: ref,
	})); err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	return readableByAll(dir)
}

// readableByAll sets every file under dir to 0644 and every directory to 0755: go-containerregistry
// writes blobs through os.CreateTemp (0600) and index.json with os.ModePerm.
func readableByAll(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
}

// WriteTarball writes img as a `docker load`-able tarball tagged ref (one platform only:
// the tarball format has no index).
func WriteTarball(path string, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
