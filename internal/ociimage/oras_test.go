package ociimage

import (
	"context"
	"os"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"
)

// TestORASFindsReferrers: ORAS (oras discover --oci-layout, oras cp -r --from-oci-layout)
// reads the layout, resolves the image by its ref name and finds an attached artifact as a
// referrer of its subject, by artifact type.
func TestORASFindsReferrers(t *testing.T) {
	dir, idx := writeTestLayout(t)
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := idx.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	subject := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: d, Size: int64(len(raw))}
	if _, err := AttachReferrer(dir, subject, Artifact{ArtifactType: "application/spdx+json", MediaType: "application/spdx+json", Content: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := store.Resolve(ctx, "example.com/mooring:v1")
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != d.String() {
		t.Fatalf("ORAS resolves the ref name to %s, want the index %s", desc.Digest, d)
	}
	for artifactType, want := range map[string]int{"application/spdx+json": 1, "application/vnd.in-toto+json": 0} {
		refs, err := registry.Referrers(ctx, store, ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}, artifactType)
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) != want || want == 1 && refs[0].ArtifactType != artifactType {
			t.Errorf("ORAS finds %d referrers of type %s (%v), want %d", len(refs), artifactType, refs, want)
		}
	}
}
