package release

import (
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/mooringhq/mooring/internal/ociimage"
)

// TestReleaseIsVerifiable builds the operator's release image for linux/amd64 as `make
// release` does (one platform of one image, to stay near a minute), signs its provenance
// with a throwaway key, and checks what a user would: the DSSE signature with the public
// key, the statement's subjects against the layout's manifests, and the SBOM against
// go.mod and the binary inside the image. Then it forges each part and expects Verify to
// refuse it.
func TestReleaseIsVerifiable(t *testing.T) {
	out := t.TempDir()
	key, err := GenerateKey(filepath.Join(t.TempDir(), "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := ReadSource()
	if err != nil {
		t.Fatal(err)
	}
	src.Version = "v0.0.0-releasetest"
	operator := Images[0]
	operator.Package = "github.com/mooringhq/mooring/cmd/mooring" // this test runs in internal/release
	if err := Release([]Image{operator}, Options{
		Out: out, Platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}}, Source: src, Key: key,
	}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "mooring")
	pub, err := ParsePublicKeyPEM(readFile(t, filepath.Join(out, PublicKeyFile)))
	if err != nil {
		t.Fatal(err)
	}

	v, err := Verify(dir, pub)
	if err != nil {
		t.Fatal(err)
	}
	if v.Ref != "ghcr.io/mooringhq/mooring:v0.0.0-releasetest" || len(v.Images) != 1 || v.Images[0].Platform != "linux/amd64" {
		t.Fatalf("verified %s with %d images", v.Ref, len(v.Images))
	}

	// The subjects, checked here against the layout as crane or skopeo read it.
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := root.ImageIndex(v.Index)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{v.Index.Hex: true}
	for _, m := range im.Manifests {
		want[m.Digest.Hex] = true
	}
	got := map[string]bool{}
	for _, s := range v.Statement.Subject {
		got[s.Digest["sha256"]] = true
	}
	if len(got) != len(want) || len(want) != 2 {
		t.Errorf("subjects %v, want the index and its manifest %v", got, want)
	}
	for d := range want {
		if !got[d] {
			t.Errorf("subject %s missing", d)
		}
	}
	pred := v.Statement.Predicate
	ext := pred.BuildDefinition.ExternalParameters
	if ext.Package != operator.Package || ext.Version != src.Version || ext.Revision != src.Revision ||
		pred.RunDetails.Builder.ID != DefaultBuilderID || pred.BuildDefinition.BuildType != BuildType ||
		pred.RunDetails.Byproducts == nil || len(pred.RunDetails.Byproducts) != 0 {
		t.Errorf("provenance %+v", pred)
	}
	if !strings.Contains(pred.BuildDefinition.InternalParameters.LDFlags, "-X "+VersionPackage+".Version="+src.Version) {
		t.Errorf("ldflags %q do not set the version", pred.BuildDefinition.InternalParameters.LDFlags)
	}

	// The SBOM lists go.mod's direct requirements that the binary links, at the versions
	// go.mod pins; controller-runtime and client-go at least.
	sbom := map[string]string{}
	for _, pkg := range v.Images[0].SBOM.Packages {
		sbom[pkg.Name] = pkg.VersionInfo
	}
	deps := map[string]string{}
	for _, h1 := range pred.BuildDefinition.ResolvedDependencies {
		deps[h1.Name] = h1.Annotations["h1"]
	}
	linked := map[string]bool{}
	for _, m := range v.Images[0].BuildInfo.Deps {
		linked[m.Path] = true
	}
	checked := map[string]bool{}
	for _, r := range goModRequires(t) {
		if r.Indirect || !linked[r.Path] {
			continue
		}
		checked[r.Path] = true
		if sbom[r.Path] != r.Version {
			t.Errorf("SBOM lists %s at %q, go.mod pins %s", r.Path, sbom[r.Path], r.Version)
		}
		if !strings.HasPrefix(deps[r.Path], "h1:") {
			t.Errorf("provenance resolves %s with hash %q, want its h1:", r.Path, deps[r.Path])
		}
	}
	for _, m := range []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go"} {
		if !checked[m] {
			t.Errorf("%s: not a direct requirement the operator links", m)
		}
	}

	// Beside the layout: the SBOM and the envelope as files, the same bytes as the referrers.
	refs, err := ociimage.Referrers(dir, v.Index)
	if err != nil || len(refs) != 1 {
		t.Fatalf("referrers of the index: %d, %v", len(refs), err)
	}
	if string(readFile(t, filepath.Join(out, "mooring.intoto.jsonl"))) != string(refs[0].Content)+"\n" {
		t.Error("mooring.intoto.jsonl is not the attached envelope")
	}
	var doc SPDX
	if err := json.Unmarshal(readFile(t, filepath.Join(out, "mooring.linux-amd64.spdx.json")), &doc); err != nil || doc.DocumentNamespace != v.Images[0].SBOM.DocumentNamespace {
		t.Errorf("mooring.linux-amd64.spdx.json is not the attached SBOM: %v", err)
	}
	checkReadableByAll(t, out)

	t.Run("another key", func(t *testing.T) {
		other, _, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(dir, other); err == nil || !strings.Contains(err.Error(), "signature") {
			t.Errorf("verified with another key: %v", err)
		}
	})
	t.Run("forged provenance", func(t *testing.T) {
		forged := v.Statement
		forged.Subject = forged.Subject[:1] // the index alone
		payload, err := json.Marshal(forged)
		if err != nil {
			t.Fatal(err)
		}
		// Signed with the release key, the subjects are still checked.
		f := replaceReferrer(t, dir, v.Index, InTotoMediaType, DSSEMediaType, envelope(t, key, payload))
		if _, err := Verify(f, pub); err == nil || !strings.Contains(err.Error(), "subjects") {
			t.Errorf("a statement missing a manifest verified: %v", err)
		}
		// The original statement with a signature that is not over it.
		env := envelope(t, key, payload)
		var e Envelope
		if err := json.Unmarshal(refs[0].Content, &e); err != nil {
			t.Fatal(err)
		}
		var forgedEnv Envelope
		if err := json.Unmarshal(env, &forgedEnv); err != nil {
			t.Fatal(err)
		}
		forgedEnv.Signatures = e.Signatures
		raw, err := json.Marshal(forgedEnv)
		if err != nil {
			t.Fatal(err)
		}
		f = replaceReferrer(t, dir, v.Index, InTotoMediaType, DSSEMediaType, raw)
		if _, err := Verify(f, pub); err == nil || !strings.Contains(err.Error(), "signature") {
			t.Errorf("a statement under another statement's signature verified: %v", err)
		}
	})
	t.Run("SBOM without a module", func(t *testing.T) {
		doc := v.Images[0].SBOM
		var kept []SPDXPackage
		for _, p := range doc.Packages {
			if p.Name != "k8s.io/client-go" {
				kept = append(kept, p)
			}
		}
		doc.Packages = kept
		raw, err := doc.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		f := replaceReferrer(t, dir, v.Images[0].Manifest, SPDXMediaType, SPDXMediaType, raw)
		if _, err := Verify(f, pub); err == nil || !strings.Contains(err.Error(), "k8s.io/client-go") {
			t.Errorf("an SBOM without client-go verified: %v", err)
		}
	})
}

type require struct {
	Path, Version string
	Indirect      bool
}

// goModRequires reads go.mod's requirements with `go mod edit -json`.
func goModRequires(t *testing.T) []require {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var mod struct{ Require []require }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	return mod.Require
}

func envelope(t *testing.T, key crypto.Signer, payload []byte) []byte {
	t.Helper()
	env, err := Sign(key, InTotoMediaType, payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// replaceReferrer copies the layout dir and replaces its referrers of subject of
// artifactType with one holding content; it returns the copy.
func replaceReferrer(t *testing.T, dir string, subject v1.Hash, artifactType, mediaType string, content []byte) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "layout")
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveDescriptors(func(d v1.Descriptor) bool { return d.ArtifactType == artifactType }); err != nil {
		t.Fatal(err)
	}
	raw, err := ociimage.ReadBlob(cp, subject)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MediaType string `json:"mediaType"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	desc := v1.Descriptor{MediaType: types.MediaType(m.MediaType), Digest: subject, Size: int64(len(raw))}
	if _, err := ociimage.AttachReferrer(cp, desc, ociimage.Artifact{ArtifactType: artifactType, MediaType: types.MediaType(mediaType), Content: content}); err != nil {
		t.Fatal(err)
	}
	return cp
}

func checkReadableByAll(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if d.IsDir() && st.Mode().Perm() != 0o755 || !d.IsDir() && st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %o", p, st.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
