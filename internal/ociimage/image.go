package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the image runs as (distroless' "nonroot").
const NonRoot = 65532

// CACertificatesLabel is the config label that says where the image's CA bundle comes from.
const CACertificatesLabel = "dev.mooring.image.ca-certificates"

// Spec describes one image.
type Spec struct {
	// Name is the binary's name; it is installed as /<Name> and is the entrypoint.
	Name string
	// Binary is the static executable.
	Binary []byte
	// Platform is the binary's platform, e.g. linux/amd64.
	Platform v1.Platform
	// Created stamps the config and every file: the commit time, for reproducibility.
	Created time.Time
	// Labels become the config's labels (org.opencontainers.image.*); Build adds
	// CACertificatesLabel.
	Labels map[string]string
	// Args are default arguments after the entrypoint.
	Args []string
}

// Build returns the image described by s.
func Build(s Spec) (v1.Image, error) {
	if s.Name == "" || path.Base(s.Name) != s.Name {
		return nil, fmt.Errorf("binary name %q must be a plain file name", s.Name)
	}
	if len(s.Binary) == 0 {
		return nil, errors.New("binary is empty")
	}
	if s.Platform.OS == "" || s.Platform.Architecture == "" {
		return nil, errors.New("platform needs an OS and an architecture")
	}
	layerTar, err := rootfs(s)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "mooring hack/image: " + s.Name},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant
	cf.Created = v1.Time{Time: s.Created}
	_, caSource := CACertificates()
	labels := map[string]string{CACertificatesLabel: caSource}
	maps.Copy(labels, s.Labels)
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + s.Name},
		Cmd:        s.Args,
		User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=/home/nonroot"},
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return img, nil
}

type entry struct {
	name string
	mode int64
	uid  int
	body []byte // nil for a directory
}

// rootfs is the single layer: the binary, a minimal non-root user environment and the CA
// bundle TLS clients (OTLP exporters, for one) verify servers with.
func rootfs(s Spec) ([]byte, error) {
	caPEM, _ := CACertificates()
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CACertificatesPath, mode: 0o644, body: caPEM},
		{name: "etc/passwd", mode: 0o644, body: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)},
		{name: "etc/group", mode: 0o644, body: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", NonRoot)},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: NonRoot},
		{name: "tmp/", mode: 0o1777},
		{name: s.Name, mode: 0o755, body: s.Binary},
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid,
			// Whole seconds keep the headers plain USTAR, without PAX time records.
			ModTime: s.Created.UTC().Truncate(time.Second),
		}
		if e.body == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
