package plugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin (krew.googlecontainertools.github.com/v1alpha2)
// a manifest may hold; strict decoding rejects any field krew does not know.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats,omitempty"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files,omitempty"`
		} `json:"platforms"`
	} `json:"spec"`
}

// The krew manifest follows krew's rules (those of its `validate-krew-manifest`): known
// fields only, a semantic version, one platform per os/arch with an https archive of that
// version, a sha256, and the binary named kubectl-mooring. When `make plugin-dist` has
// built the archives, their sha256 must be the manifest's.
func TestKrewManifest(t *testing.T) {
	path := filepath.Join("..", "..", "plugins", "mooring.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion/kind = %s/%s", p.APIVersion, p.Kind)
	}
	if p.Metadata.Name != "mooring" {
		t.Errorf("metadata.name = %q, want mooring (the binary is kubectl-mooring)", p.Metadata.Name)
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(p.Spec.Version) {
		t.Errorf("spec.version %q is not a semantic version with a leading v", p.Spec.Version)
	}
	if !strings.HasPrefix(p.Spec.Homepage, "https://") {
		t.Errorf("spec.homepage %q is not https", p.Spec.Homepage)
	}
	if n := len(p.Spec.ShortDescription); n == 0 || n > 60 {
		t.Errorf("spec.shortDescription has %d characters, want 1-60", n)
	}
	if p.Spec.Description == "" {
		t.Error("spec.description is empty")
	}
	if len(p.Spec.Platforms) == 0 {
		t.Fatal("no platforms")
	}
	seen := map[string]bool{}
	hex64 := regexp.MustCompile(`^[a-f0-9]{64}$`)
	for i, pl := range p.Spec.Platforms {
		goos, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		key := goos + "/" + arch
		switch {
		case goos == "" || arch == "":
			t.Errorf("platform %d: selector needs os and arch, has %v", i, pl.Selector.MatchLabels)
		case seen[key]:
			t.Errorf("platform %s listed twice", key)
		}
		seen[key] = true
		if !strings.HasPrefix(pl.URI, "https://") || !strings.Contains(pl.URI, "/"+p.Spec.Version+"/") ||
			!strings.HasSuffix(pl.URI, "_"+goos+"_"+arch+".tar.gz") {
			t.Errorf("platform %s: uri %q is not the https .tar.gz of version %s for it", key, pl.URI, p.Spec.Version)
		}
		if !hex64.MatchString(pl.Sha256) {
			t.Errorf("platform %s: sha256 %q is not 64 lower-case hex digits (make plugin-dist VERSION=%s writes it)", key, pl.Sha256, p.Spec.Version)
		}
		want := "kubectl-mooring"
		if goos == "windows" {
			want += ".exe"
		}
		if pl.Bin != want {
			t.Errorf("platform %s: bin %q, want %q", key, pl.Bin, want)
		}
		// krew-index wants the license installed with the binary.
		var files []string
		for _, f := range pl.Files {
			files = append(files, f.From+"->"+f.To)
		}
		if wantFiles := []string{want + "->.", "LICENSE->."}; !slices.Equal(files, wantFiles) {
			t.Errorf("platform %s: files %v, want %v", key, files, wantFiles)
		}
		archive := filepath.Join("..", "..", "dist", filepath.Base(pl.URI))
		if data, err := os.ReadFile(archive); err == nil {
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != pl.Sha256 {
				t.Errorf("platform %s: %s has sha256 %s, the manifest says %s", key, archive, got, pl.Sha256)
			}
			if names := archiveNames(t, data); !slices.Equal(names, []string{"LICENSE", want}) {
				t.Errorf("platform %s: %s holds %v, want LICENSE and %s", key, archive, names, want)
			}
		}
	}
}

// archiveNames lists the files of a .tar.gz, sorted.
func archiveNames(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	slices.Sort(names)
	return names
}

// The plugin is released under the repository's license, which ships in its archive.
func TestLicense(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "Apache License\n                           Version 2.0, January 2004") {
		t.Error("LICENSE is not the Apache License 2.0")
	}
}
