package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// SPDXMediaType is the media type and OCI artifact type of an SPDX JSON document.
const SPDXMediaType = "application/spdx+json"

// SPDX is the part of an SPDX 2.3 JSON document Mooring writes and reads.
type SPDX struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      SPDXCreationInfo   `json:"creationInfo"`
	Packages          []SPDXPackage      `json:"packages"`
	Relationships     []SPDXRelationship `json:"relationships"`
}

// SPDXCreationInfo says who made the document and when.
type SPDXCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// SPDXPackage is one package: the image, the main module, the Go standard library or a
// Go module the binary links.
type SPDXPackage struct {
	Name                  string            `json:"name"`
	SPDXID                string            `json:"SPDXID"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	Checksums             []SPDXChecksum    `json:"checksums,omitempty"`
	ExternalRefs          []SPDXExternalRef `json:"externalRefs,omitempty"`
	Comment               string            `json:"comment,omitempty"`
}

// SPDXChecksum is a package's checksum.
type SPDXChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

// SPDXExternalRef is a package URL (purl).
type SPDXExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

// SPDXRelationship relates two elements.
type SPDXRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

const (
	spdxImageID  = "SPDXRef-Image"
	spdxMainID   = "SPDXRef-GoModule-main"
	spdxStdlibID = "SPDXRef-GoStdlib"
	noAssertion  = "NOASSERTION"
)

var spdxIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// Module is a Go module a binary links, as its build information records it (the
// replacement when the module is replaced).
type Module struct {
	Path, Version, Sum string
	// Replaces is the replaced module's path@version when this one replaces it.
	Replaces string
}

// Modules returns the modules bi records as linked, replacements resolved.
func Modules(bi *debug.BuildInfo) []Module {
	out := make([]Module, 0, len(bi.Deps))
	for _, d := range bi.Deps {
		m := Module{Path: d.Path, Version: d.Version, Sum: d.Sum}
		if r := d.Replace; r != nil {
			m = Module{Path: r.Path, Version: r.Version, Sum: r.Sum, Replaces: d.Path + "@" + d.Version}
		}
		out = append(out, m)
	}
	return out
}

// GoPURL is a Go module's package URL.
func GoPURL(path, version string) string {
	if version == "" {
		return "pkg:golang/" + path
	}
	return "pkg:golang/" + path + "@" + url.PathEscape(version)
}

// NewSBOM describes the image (manifest digest, platform) of a binary built from src whose
// build information is bi: the image contains the main module, which depends on the Go
// standard library and each module bi records.
func NewSBOM(img Image, tag string, manifest v1.Hash, plat v1.Platform, bi *debug.BuildInfo, src Source) SPDX {
	platform := plat.OS + "-" + plat.Architecture
	if plat.Variant != "" {
		platform += "-" + plat.Variant
	}
	repo, name := img.Repository, img.Repository
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		name = repo[i+1:]
	}
	// purl: the digest's colon escaped, qualifiers sorted by key.
	imagePURL := fmt.Sprintf("pkg:oci/%s@sha256%%3A%s?arch=%s&os=%s&repository_url=%s&tag=%s",
		name, manifest.Hex, plat.Architecture, plat.OS, repo, url.QueryEscape(tag))
	doc := SPDX{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              fmt.Sprintf("%s:%s %s/%s", repo, tag, plat.OS, plat.Architecture),
		DocumentNamespace: fmt.Sprintf("https://github.com/mooringhq/mooring/spdx/%s/%s/%s/%s", img.Name, url.PathEscape(tag), platform, manifest.Hex),
		CreationInfo: SPDXCreationInfo{
			Created:  src.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Organization: Mooring", "Tool: mooring-hack-release"},
		},
		Packages: []SPDXPackage{
			{
				Name: repo, SPDXID: spdxImageID, VersionInfo: tag, DownloadLocation: noAssertion,
				PrimaryPackagePurpose: "CONTAINER",
				Checksums:             []SPDXChecksum{{Algorithm: "SHA256", ChecksumValue: manifest.Hex}},
				ExternalRefs:          []SPDXExternalRef{purl(imagePURL)},
				Comment:               "The OCI image manifest for " + plat.String() + "; the checksum is its digest.",
			},
			{
				Name: bi.Main.Path, SPDXID: spdxMainID, VersionInfo: src.Version,
				DownloadLocation: "git+https://github.com/mooringhq/mooring@" + src.Revision, PrimaryPackagePurpose: "APPLICATION",
				ExternalRefs: []SPDXExternalRef{purl(GoPURL(bi.Main.Path, src.Version))},
				Comment:      fmt.Sprintf("The binary /%s, built from Go package %s at commit %s.", img.Name, bi.Path, src.Revision),
			},
			{
				Name: "stdlib", SPDXID: spdxStdlibID, VersionInfo: bi.GoVersion, DownloadLocation: noAssertion,
				PrimaryPackagePurpose: "LIBRARY", ExternalRefs: []SPDXExternalRef{purl(GoPURL("stdlib", bi.GoVersion))},
				Comment: "The Go standard library and runtime the binary was built with.",
			},
		},
		Relationships: []SPDXRelationship{
			{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: spdxImageID},
			{Element: spdxImageID, Type: "CONTAINS", Related: spdxMainID},
			{Element: spdxMainID, Type: "DEPENDS_ON", Related: spdxStdlibID},
		},
	}
	seen := map[string]bool{}
	for _, m := range Modules(bi) {
		id := "SPDXRef-GoModule-" + strings.Trim(spdxIDUnsafe.ReplaceAllString(m.Path+"-"+m.Version, "-"), "-")
		for base, n := id, 2; seen[id]; n++ {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		seen[id] = true
		p := SPDXPackage{
			Name: m.Path, SPDXID: id, VersionInfo: m.Version, DownloadLocation: noAssertion,
			PrimaryPackagePurpose: "LIBRARY", ExternalRefs: []SPDXExternalRef{purl(GoPURL(m.Path, m.Version))},
		}
		if m.Sum != "" {
			p.Comment = "go.sum " + m.Sum
		}
		if m.Replaces != "" {
			p.Comment = strings.TrimSpace("Replaces " + m.Replaces + ". " + p.Comment)
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, SPDXRelationship{Element: spdxMainID, Type: "DEPENDS_ON", Related: id})
	}
	return doc
}

func purl(locator string) SPDXExternalRef {
	return SPDXExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: locator}
}

// Marshal is the document as indented JSON with a final newline.
func (d SPDX) Marshal() ([]byte, error) {
	return marshalJSON(d, "  ")
}

// marshalJSON is json.Marshal (indented when indent is not empty, with a final newline
// then) without HTML escaping: purls keep their & as &.
func marshalJSON(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if indent == "" {
		b = bytes.TrimSuffix(b, []byte("\n"))
	}
	return b, nil
}
