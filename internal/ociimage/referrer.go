package ociimage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// emptyConfig is the OCI 1.1 empty descriptor's content, the config of an artifact manifest.
var emptyConfig = []byte("{}")

// EmptyConfigMediaType is the OCI 1.1 empty descriptor's media type.
const EmptyConfigMediaType types.MediaType = "application/vnd.oci.empty.v1+json"

// Artifact is one blob attached to a manifest as an OCI 1.1 referrer.
type Artifact struct {
	// ArtifactType is the referrer manifest's artifactType, e.g. application/spdx+json.
	ArtifactType string
	// MediaType is the blob's (the manifest's only layer's) media type.
	MediaType types.MediaType
	// Content is the blob.
	Content []byte
	// Annotations go on the referrer manifest and on its index.json entry.
	Annotations map[string]string
}

// AttachReferrer writes an OCI 1.1 artifact manifest whose subject is subject and whose
// one layer is a.Content into the layout in dir, and lists it in index.json (without a
// ref name, so `oci:<dir>:<tag>` still names the image alone). Tools that read OCI
// layouts' referrers (oras discover --oci-layout, oras cp -r) find it by its subject.
func AttachReferrer(dir string, subject v1.Descriptor, a Artifact) (v1.Descriptor, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return v1.Descriptor{}, err
	}
	blob, err := writeBlob(p, a.MediaType, a.Content)
	if err != nil {
		return v1.Descriptor{}, err
	}
	config, err := writeBlob(p, EmptyConfigMediaType, emptyConfig)
	if err != nil {
		return v1.Descriptor{}, err
	}
	subject = v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  a.ArtifactType,
		Config:        config,
		Layers:        []v1.Descriptor{blob},
		Subject:       &subject,
		Annotations:   maps.Clone(a.Annotations),
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return v1.Descriptor{}, err
	}
	desc, err := writeBlob(p, types.OCIManifestSchema1, raw)
	if err != nil {
		return v1.Descriptor{}, err
	}
	desc.ArtifactType, desc.Annotations = a.ArtifactType, maps.Clone(a.Annotations)
	if err := p.AppendDescriptor(desc); err != nil {
		return v1.Descriptor{}, fmt.Errorf("list referrer in %s: %w", dir, err)
	}
	return desc, readableByAll(dir)
}

func writeBlob(p layout.Path, mt types.MediaType, content []byte) (v1.Descriptor, error) {
	h, size, err := v1.SHA256(bytes.NewReader(content))
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(content))); err != nil {
		return v1.Descriptor{}, fmt.Errorf("write blob %s: %w", h, err)
	}
	return v1.Descriptor{MediaType: mt, Digest: h, Size: size}, nil
}

// Referrer is an artifact found in a layout: its manifest and its one blob.
type Referrer struct {
	Descriptor v1.Descriptor
	Manifest   v1.Manifest
	Content    []byte
}

// Referrers returns the artifacts in the layout in dir whose subject has digest subject.
func Referrers(dir string, subject v1.Hash) ([]Referrer, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Referrer
	for _, d := range im.Manifests {
		if d.MediaType != types.OCIManifestSchema1 {
			continue
		}
		raw, err := verifiedBlob(p, d.Digest)
		if err != nil {
			return nil, err
		}
		var m v1.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", d.Digest, err)
		}
		if m.Subject == nil || m.Subject.Digest != subject || len(m.Layers) != 1 {
			continue
		}
		content, err := verifiedBlob(p, m.Layers[0].Digest)
		if err != nil {
			return nil, err
		}
		out = append(out, Referrer{Descriptor: d, Manifest: m, Content: content})
	}
	return out, nil
}

// verifiedBlob reads the blob h and checks that its content has that digest.
func verifiedBlob(p layout.Path, h v1.Hash) ([]byte, error) {
	content, err := p.Bytes(h)
	if err != nil {
		return nil, err
	}
	if got, _, err := v1.SHA256(bytes.NewReader(content)); err != nil || got != h {
		return nil, fmt.Errorf("blob %s does not match its digest", h)
	}
	return content, nil
}

// ReadBlob reads the blob h of the layout in dir and checks that its content has that digest.
func ReadBlob(dir string, h v1.Hash) ([]byte, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	return verifiedBlob(p, h)
}
