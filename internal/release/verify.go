package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/mooringhq/mooring/internal/ociimage"
)

// Verified is what Verify found and checked in a layout.
type Verified struct {
	// Ref is the name index.json gives the image.
	Ref string
	// Index is the image index's digest.
	Index v1.Hash
	// Statement is the signed provenance.
	Statement Statement
	// Images are the per-platform images.
	Images []VerifiedImage
}

// VerifiedImage is one platform's image, its SBOM and its binary's build information.
type VerifiedImage struct {
	Platform  string
	Manifest  v1.Hash
	SBOM      SPDX
	BuildInfo *debug.BuildInfo
}

// Verify checks the release layout in dir with the release's public key pub:
//   - the image index named in index.json has exactly one provenance referrer, a DSSE
//     envelope whose signature verifies with pub over an in-toto Statement v1 with a SLSA
//     provenance v1 predicate;
//   - the statement's subjects are exactly the index and its image manifests;
//   - each image manifest has exactly one SPDX 2.3 SBOM referrer that lists every Go
//     module (and the Go version) the binary inside that image was built with, at the
//     versions it was built with, and the provenance lists each module with its h1: hash;
//   - each image's version and revision labels are the provenance's.
//
// Every blob read is checked against its digest.
func Verify(dir string, pub crypto.PublicKey) (Verified, error) {
	var v Verified
	root, err := readIndex(dir)
	if err != nil {
		return v, err
	}
	var named []v1.Descriptor
	for _, d := range root.Manifests {
		if d.Annotations[ociimage.RefNameAnnotation] != "" && d.MediaType == types.OCIImageIndex {
			named = append(named, d)
		}
	}
	if len(named) != 1 {
		return v, fmt.Errorf("%s: index.json names %d image indexes, want 1", dir, len(named))
	}
	v.Ref, v.Index = named[0].Annotations[ociimage.RefNameAnnotation], named[0].Digest
	raw, err := ociimage.ReadBlob(dir, v.Index)
	if err != nil {
		return v, err
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(raw, &idx); err != nil {
		return v, fmt.Errorf("image index %s: %w", v.Index, err)
	}
	if v.Statement, err = verifiedProvenance(dir, v.Index, pub); err != nil {
		return v, err
	}
	want := []v1.Hash{v.Index}
	for _, m := range idx.Manifests {
		want = append(want, m.Digest)
	}
	if err := sameDigests(v.Statement.subjectDigests(), want); err != nil {
		return v, err
	}
	for _, m := range idx.Manifests {
		vi, err := verifyImage(dir, m, v.Statement)
		if err != nil {
			return v, err
		}
		v.Images = append(v.Images, vi)
	}
	return v, nil
}

func readIndex(dir string) (v1.IndexManifest, error) {
	var im v1.IndexManifest
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return im, err
	}
	if err := json.Unmarshal(raw, &im); err != nil {
		return im, fmt.Errorf("%s/index.json: %w", dir, err)
	}
	return im, nil
}

// verifiedProvenance opens the one provenance referrer of the index with pub.
func verifiedProvenance(dir string, index v1.Hash, pub crypto.PublicKey) (Statement, error) {
	var stmt Statement
	refs, err := referrersOfType(dir, index, InTotoMediaType)
	if err != nil {
		return stmt, err
	}
	if len(refs) != 1 {
		return stmt, fmt.Errorf("image index %s has %d provenance referrers (%s), want 1", index, len(refs), InTotoMediaType)
	}
	var env Envelope
	if err := json.Unmarshal(refs[0].Content, &env); err != nil {
		return stmt, fmt.Errorf("provenance envelope: %w", err)
	}
	payload, err := env.Open(pub, InTotoMediaType)
	if err != nil {
		return stmt, fmt.Errorf("provenance of %s: %w", index, err)
	}
	if err := json.Unmarshal(payload, &stmt); err != nil {
		return stmt, fmt.Errorf("provenance statement: %w", err)
	}
	if stmt.Type != StatementType || stmt.PredicateType != SLSAProvenanceType {
		return stmt, fmt.Errorf("provenance is a %q with predicate %q, want %q with %q", stmt.Type, stmt.PredicateType, StatementType, SLSAProvenanceType)
	}
	return stmt, nil
}

func referrersOfType(dir string, subject v1.Hash, artifactType string) ([]ociimage.Referrer, error) {
	all, err := ociimage.Referrers(dir, subject)
	if err != nil {
		return nil, err
	}
	var out []ociimage.Referrer
	for _, r := range all {
		if r.Manifest.ArtifactType == artifactType {
			out = append(out, r)
		}
	}
	return out, nil
}

// sameDigests fails unless got and want hold the same digests, each once.
func sameDigests(got, want []v1.Hash) error {
	g, w := hashStrings(got), hashStrings(want)
	if !slices.Equal(g, w) || len(slices.Compact(slices.Clone(g))) != len(g) {
		return fmt.Errorf("provenance subjects %v, want the index and its manifests %v", g, w)
	}
	return nil
}

func hashStrings(hs []v1.Hash) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.String())
	}
	slices.Sort(out)
	return out
}

func verifyImage(dir string, desc v1.Descriptor, stmt Statement) (VerifiedImage, error) {
	vi := VerifiedImage{Manifest: desc.Digest}
	if desc.Platform != nil {
		vi.Platform = desc.Platform.String()
	}
	raw, err := ociimage.ReadBlob(dir, desc.Digest)
	if err != nil {
		return vi, err
	}
	var m v1.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return vi, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	raw, err = ociimage.ReadBlob(dir, m.Config.Digest)
	if err != nil {
		return vi, err
	}
	var cf v1.ConfigFile
	if err := json.Unmarshal(raw, &cf); err != nil {
		return vi, fmt.Errorf("config of %s: %w", desc.Digest, err)
	}
	ext := stmt.Predicate.BuildDefinition.ExternalParameters
	if l := cf.Config.Labels; l["org.opencontainers.image.version"] != ext.Version || l["org.opencontainers.image.revision"] != ext.Revision {
		return vi, fmt.Errorf("image %s: labels version %q revision %q, provenance %q %q", desc.Digest,
			l["org.opencontainers.image.version"], l["org.opencontainers.image.revision"], ext.Version, ext.Revision)
	}
	if len(cf.Config.Entrypoint) != 1 {
		return vi, fmt.Errorf("image %s: entrypoint %v, want one binary", desc.Digest, cf.Config.Entrypoint)
	}
	bin, err := extractFile(dir, m.Layers, strings.TrimPrefix(cf.Config.Entrypoint[0], "/"))
	if err != nil {
		return vi, fmt.Errorf("image %s: %w", desc.Digest, err)
	}
	if vi.BuildInfo, err = buildinfo.Read(bytes.NewReader(bin)); err != nil {
		return vi, fmt.Errorf("image %s: build information of %s: %w", desc.Digest, cf.Config.Entrypoint[0], err)
	}
	refs, err := referrersOfType(dir, desc.Digest, SPDXMediaType)
	if err != nil {
		return vi, err
	}
	if len(refs) != 1 {
		return vi, fmt.Errorf("image %s has %d SBOM referrers (%s), want 1", desc.Digest, len(refs), SPDXMediaType)
	}
	if err := json.Unmarshal(refs[0].Content, &vi.SBOM); err != nil {
		return vi, fmt.Errorf("SBOM of %s: %w", desc.Digest, err)
	}
	if err := checkSBOM(vi.SBOM, desc.Digest, vi.BuildInfo); err != nil {
		return vi, fmt.Errorf("SBOM of %s: %w", desc.Digest, err)
	}
	if err := checkDependencies(stmt, vi.BuildInfo); err != nil {
		return vi, fmt.Errorf("provenance of %s: %w", desc.Digest, err)
	}
	return vi, nil
}

// extractFile returns the file name from the image's layers (the last layer that has it).
func extractFile(dir string, layers []v1.Descriptor, name string) ([]byte, error) {
	var found []byte
	for _, l := range layers {
		blob, err := ociimage.ReadBlob(dir, l.Digest)
		if err != nil {
			return nil, err
		}
		var r io.Reader = bytes.NewReader(blob)
		if strings.HasSuffix(string(l.MediaType), "gzip") {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
			}
			r = zr
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
			}
			if strings.TrimPrefix(h.Name, "./") == name && h.Typeflag == tar.TypeReg {
				if found, err = io.ReadAll(tr); err != nil {
					return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
				}
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no /%s in its layers", name)
	}
	return found, nil
}

// checkSBOM fails unless doc is an SPDX 2.3 document of the image manifest that lists the
// Go version and every module bi records, at bi's versions.
func checkSBOM(doc SPDX, manifest v1.Hash, bi *debug.BuildInfo) error {
	if doc.SPDXVersion != "SPDX-2.3" {
		return fmt.Errorf("spdxVersion %q, want SPDX-2.3", doc.SPDXVersion)
	}
	versions := map[string]string{}
	describes := false
	for _, p := range doc.Packages {
		versions[p.Name] = p.VersionInfo
		if p.SPDXID == spdxImageID {
			describes = len(p.Checksums) == 1 && p.Checksums[0].ChecksumValue == manifest.Hex
		}
	}
	if !describes {
		return fmt.Errorf("its image package is not manifest %s", manifest)
	}
	var bad []string
	if versions["stdlib"] != bi.GoVersion {
		bad = append(bad, fmt.Sprintf("stdlib %q (built with %s)", versions["stdlib"], bi.GoVersion))
	}
	for _, m := range Modules(bi) {
		if got, ok := versions[m.Path]; !ok || got != m.Version {
			bad = append(bad, fmt.Sprintf("%s %q (linked: %s)", m.Path, got, m.Version))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("modules missing or at other versions: %s", strings.Join(bad, ", "))
	}
	return nil
}

// checkDependencies fails unless the provenance resolves every module bi records with
// its h1: hash.
func checkDependencies(stmt Statement, bi *debug.BuildInfo) error {
	sums := map[string]string{}
	for _, d := range stmt.Predicate.BuildDefinition.ResolvedDependencies {
		sums[d.URI] = d.Annotations["h1"]
	}
	var bad []string
	for _, m := range Modules(bi) {
		if got, ok := sums[GoPURL(m.Path, m.Version)]; !ok || got != m.Sum {
			bad = append(bad, fmt.Sprintf("%s@%s %q (linked: %q)", m.Path, m.Version, got, m.Sum))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("resolved dependencies missing or with other hashes: %s", strings.Join(bad, ", "))
	}
	return nil
}
