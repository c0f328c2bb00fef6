package release

import (
	"crypto"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/mooringhq/mooring/internal/ociimage"
)

// PublicKeyFile is the release's public key in the output directory.
const PublicKeyFile = "release.pub"

// PredicateTypeAnnotation is the annotation on a provenance referrer naming its predicate
// type, as BuildKit writes it.
const PredicateTypeAnnotation = "in-toto.io/predicate-type"

// Options are a release's settings.
type Options struct {
	// Out is the output directory (dist/release).
	Out string
	// Platforms are built for each image.
	Platforms []v1.Platform
	// Source is the version, commit and time built.
	Source Source
	// Key signs the provenance.
	Key crypto.Signer
	// BuilderID is the provenance's builder id (DefaultBuilderID when empty).
	BuilderID string
	// Log gets a line per file written.
	Log io.Writer
}

// Release builds each image for every platform into <Out>/<name> (an OCI layout named
// <repository>:<version>) with its attestations attached as OCI 1.1 referrers and
// written beside the layout:
//
//	<Out>/<name>.<os>-<arch>.spdx.json  SBOM of that platform's image (referrer of its manifest)
//	<Out>/<name>.intoto.jsonl           DSSE envelope of the signed provenance (referrer of the index)
//	<Out>/release.pub                   the public key that verifies it
func Release(images []Image, o Options) error {
	if o.BuilderID == "" {
		o.BuilderID = DefaultBuilderID
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	pub, err := PublicKeyPEM(o.Key.Public())
	if err != nil {
		return err
	}
	if err := writeFile(o.Log, filepath.Join(o.Out, PublicKeyFile), pub); err != nil {
		return err
	}
	for _, img := range images {
		if err := releaseOne(img, o); err != nil {
			return fmt.Errorf("%s: %w", img.Name, err)
		}
	}
	return nil
}

func releaseOne(img Image, o Options) error {
	l, err := BuildLayout(img, o.Platforms, o.Source, "", o.Out)
	if err != nil {
		return err
	}
	created := map[string]string{"org.opencontainers.image.created": o.Source.Created.UTC().Format(time.RFC3339)}
	for _, b := range l.Images {
		desc, err := descriptor(b.Image)
		if err != nil {
			return err
		}
		sbom, err := NewSBOM(img, o.Source.Version, desc.Digest, b.Platform, b.BuildInfo, o.Source).Marshal()
		if err != nil {
			return err
		}
		if _, err := ociimage.AttachReferrer(l.Dir, desc, ociimage.Artifact{
			ArtifactType: SPDXMediaType, MediaType: SPDXMediaType, Content: sbom, Annotations: created,
		}); err != nil {
			return err
		}
		name := fmt.Sprintf("%s.%s.spdx.json", img.Name, strings.ReplaceAll(b.Platform.String(), "/", "-"))
		if err := writeFile(o.Log, filepath.Join(o.Out, name), sbom); err != nil {
			return err
		}
	}
	stmt, err := NewProvenance(img, l, o.Source, o.BuilderID)
	if err != nil {
		return err
	}
	payload, err := marshalJSON(stmt, "")
	if err != nil {
		return err
	}
	env, err := Sign(o.Key, InTotoMediaType, payload)
	if err != nil {
		return err
	}
	envelope, err := marshalJSON(env, "")
	if err != nil {
		return err
	}
	idx, err := indexDescriptor(l.Index)
	if err != nil {
		return err
	}
	annotations := map[string]string{PredicateTypeAnnotation: SLSAProvenanceType}
	maps.Copy(annotations, created)
	if _, err := ociimage.AttachReferrer(l.Dir, idx, ociimage.Artifact{
		ArtifactType: InTotoMediaType, MediaType: DSSEMediaType, Content: envelope, Annotations: annotations,
	}); err != nil {
		return err
	}
	if err := writeFile(o.Log, filepath.Join(o.Out, img.Name+".intoto.jsonl"), append(envelope, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "release: %s index %s (OCI layout %s, SBOMs and signed provenance attached)\n", l.Ref, idx.Digest, l.Dir)
	return nil
}

func descriptor(img v1.Image) (v1.Descriptor, error) {
	raw, err := img.RawManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	d, err := img.Digest()
	return v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: d, Size: int64(len(raw))}, err
}

func indexDescriptor(idx v1.ImageIndex) (v1.Descriptor, error) {
	raw, err := idx.RawManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	d, err := idx.Digest()
	return v1.Descriptor{MediaType: types.OCIImageIndex, Digest: d, Size: int64(len(raw))}, err
}

func writeFile(log io.Writer, path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	// WriteFile keeps an existing file's mode and applies the umask to a new one.
	if err := os.Chmod(path, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(log, "release: wrote", path)
	return nil
}
