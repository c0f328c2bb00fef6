package release

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	// InTotoMediaType is the payload type of a DSSE envelope holding an in-toto statement,
	// and the OCI artifact type of the signed provenance.
	InTotoMediaType = "application/vnd.in-toto+json"
	// DSSEMediaType is the media type of the provenance blob: a DSSE envelope.
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	// StatementType is the in-toto Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
	// SLSAProvenanceType is the SLSA provenance v1 predicate type.
	SLSAProvenanceType = "https://slsa.dev/provenance/v1"
	// BuildType names how Mooring's release builds an image: this package's recipe
	// (Compile, BuildLayout), whose parameters are ExternalParameters.
	BuildType = "https://github.com/mooringhq/mooring/tree/main/internal/release#v1"
	// DefaultBuilderID is the builder that ran a `make release` on a machine the release
	// manager controls; CI that builds releases says its own with --builder-id.
	DefaultBuilderID = "https://github.com/mooringhq/mooring/tree/main/hack/release"
	// SourceURI is the repository a release is built from.
	SourceURI = "git+https://github.com/mooringhq/mooring"
)

// Statement is an in-toto Statement v1 with a SLSA provenance v1 predicate.
type Statement struct {
	Type          string               `json:"_type"`
	Subject       []ResourceDescriptor `json:"subject"`
	PredicateType string               `json:"predicateType"`
	Predicate     Provenance           `json:"predicate"`
}

// ResourceDescriptor is an in-toto resource descriptor: a subject or a dependency.
type ResourceDescriptor struct {
	Name        string            `json:"name,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Digest      map[string]string `json:"digest,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Provenance is the SLSA provenance v1 predicate.
type Provenance struct {
	BuildDefinition BuildDefinition `json:"buildDefinition"`
	RunDetails      RunDetails      `json:"runDetails"`
}

// BuildDefinition is what was built and from what.
type BuildDefinition struct {
	BuildType            string               `json:"buildType"`
	ExternalParameters   ExternalParameters   `json:"externalParameters"`
	InternalParameters   InternalParameters   `json:"internalParameters"`
	ResolvedDependencies []ResourceDescriptor `json:"resolvedDependencies"`
}

// ExternalParameters are the inputs a release manager chooses.
type ExternalParameters struct {
	Package    string   `json:"package"`
	Version    string   `json:"version"`
	Revision   string   `json:"revision"`
	Repository string   `json:"repository"`
	Platforms  []string `json:"platforms"`
}

// InternalParameters are fixed by the build recipe.
type InternalParameters struct {
	GoFlags []string          `json:"goFlags"`
	LDFlags string            `json:"ldflags"`
	Env     map[string]string `json:"env"`
}

// RunDetails says who built it.
type RunDetails struct {
	Builder    Builder              `json:"builder"`
	Byproducts []ResourceDescriptor `json:"byproducts"`
}

// Builder identifies the builder.
type Builder struct {
	ID      string            `json:"id"`
	Version map[string]string `json:"version,omitempty"`
}

var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// NewProvenance is the statement that builderID built the layout l of img from src: its
// subjects are the image index and each platform's image manifest; its resolved
// dependencies the commit, the Go toolchain and every Go module the binaries link, with
// its go.sum h1: hash (as in-toto's dirHash, and as written in go.sum).
func NewProvenance(img Image, l Layout, src Source, builderID string) (Statement, error) {
	idx, err := l.Index.Digest()
	if err != nil {
		return Statement{}, err
	}
	repo := img.Repository
	subjects := []ResourceDescriptor{{Name: l.Ref, Digest: map[string]string{"sha256": idx.Hex},
		Annotations: map[string]string{"mediaType": "application/vnd.oci.image.index.v1+json"}}}
	platforms := make([]string, 0, len(l.Images))
	goVersions := map[string]bool{}
	var bis []*debug.BuildInfo
	for _, b := range l.Images {
		d, err := b.Image.Digest()
		if err != nil {
			return Statement{}, err
		}
		subjects = append(subjects, ResourceDescriptor{Name: repo + "@" + d.String(), Digest: map[string]string{"sha256": d.Hex},
			Annotations: map[string]string{"mediaType": "application/vnd.oci.image.manifest.v1+json", "platform": b.Platform.String()}})
		platforms = append(platforms, b.Platform.String())
		goVersions[b.BuildInfo.GoVersion] = true
		bis = append(bis, b.BuildInfo)
	}
	var deps []ResourceDescriptor
	if commitHash.MatchString(src.Revision) {
		deps = append(deps, ResourceDescriptor{URI: SourceURI + "@" + src.Revision, Digest: map[string]string{"gitCommit": src.Revision}})
	}
	for _, v := range sortedKeys(goVersions) {
		deps = append(deps, ResourceDescriptor{Name: "go", URI: GoPURL("stdlib", v)})
	}
	deps = append(deps, moduleDependencies(bis)...)
	return Statement{
		Type:          StatementType,
		Subject:       subjects,
		PredicateType: SLSAProvenanceType,
		Predicate: Provenance{
			BuildDefinition: BuildDefinition{
				BuildType: BuildType,
				ExternalParameters: ExternalParameters{
					Package: img.Package, Version: src.Version, Revision: src.Revision, Repository: repo, Platforms: platforms,
				},
				InternalParameters: InternalParameters{
					GoFlags: slices.Clone(BuildFlags), LDFlags: LDFlags(src), Env: map[string]string{"CGO_ENABLED": "0", "GOFLAGS": ""},
				},
				ResolvedDependencies: deps,
			},
			RunDetails: RunDetails{
				Builder:    Builder{ID: builderID, Version: map[string]string{"go": strings.Join(sortedKeys(goVersions), ",")}},
				Byproducts: []ResourceDescriptor{},
			},
		},
	}, nil
}

// moduleDependencies are the modules any of bis links, once each, sorted by path.
func moduleDependencies(bis []*debug.BuildInfo) []ResourceDescriptor {
	byKey := map[string]ResourceDescriptor{}
	for _, bi := range bis {
		for _, m := range Modules(bi) {
			rd := ResourceDescriptor{Name: m.Path, URI: GoPURL(m.Path, m.Version)}
			if m.Sum != "" {
				rd.Annotations = map[string]string{"h1": m.Sum}
				if h, ok := DirHash(m.Sum); ok {
					rd.Digest = map[string]string{"dirHash": h}
				}
			}
			if m.Replaces != "" {
				if rd.Annotations == nil {
					rd.Annotations = map[string]string{}
				}
				rd.Annotations["replaces"] = m.Replaces
			}
			byKey[m.Path+"@"+m.Version] = rd
		}
	}
	out := make([]ResourceDescriptor, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		out = append(out, byKey[k])
	}
	return out
}

// DirHash turns a go.sum "h1:<base64>" hash into in-toto's dirHash digest (the same
// SHA-256, in lowercase hex).
func DirHash(h1 string) (string, bool) {
	b64, ok := strings.CutPrefix(h1, "h1:")
	if !ok {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return "", false
	}
	return hex.EncodeToString(raw), true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// subjectDigests are the sha256 digests a statement names.
func (s Statement) subjectDigests() []v1.Hash {
	out := make([]v1.Hash, 0, len(s.Subject))
	for _, sub := range s.Subject {
		out = append(out, v1.Hash{Algorithm: "sha256", Hex: sub.Digest["sha256"]})
	}
	return out
}
