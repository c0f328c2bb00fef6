package nodeimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// writeArchive writes img as an OCI image-layout tarball (oci-layout, index.json,
// blobs/sha256/...) whose one index entry names it ref, both for containerd
// (io.containerd.image.name, which `ctr images import` uses as the image's name) and for
// other OCI tools (org.opencontainers.image.ref.name). Every entry is stamped created.
func writeArchive(w io.Writer, img v1.Image, ref string, created time.Time) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	configName, err := img.ConfigName()
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType:   types.OCIManifestSchema1,
			Size:        int64(len(manifest)),
			Digest:      digest,
			Platform:    cf.Platform(),
			Annotations: map[string]string{AnnotationContainerdName: ref, AnnotationRefName: ref},
		}},
	})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	modTime := created.UTC().Truncate(time.Second)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: modTime})
	}
	file := func(name string, size int64, body io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: modTime}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, body); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

	layout := []byte(`{"imageLayoutVersion":"1.0.0"}`)
	steps := []func() error{
		func() error { return file("oci-layout", int64(len(layout)), bytes.NewReader(layout)) },
		func() error { return file("index.json", int64(len(index)), bytes.NewReader(index)) },
		func() error { return dir("blobs/") },
		func() error { return dir("blobs/sha256/") },
		func() error { return file(blob(digest), int64(len(manifest)), bytes.NewReader(manifest)) },
		func() error { return file(blob(configName), int64(len(config)), bytes.NewReader(config)) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		if err := writeLayerBlob(l, file, blob); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeLayerBlob(l v1.Layer, file func(string, int64, io.Reader) error, blob func(v1.Hash) string) error {
	h, err := l.Digest()
	if err != nil {
		return err
	}
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	return file(blob(h), size, rc)
}
