package nodeimage

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Namespace is the containerd namespace the kubelet's CRI plugin keeps its images in:
// an image imported anywhere else is invisible to pods.
const Namespace = "k8s.io"

// Import loads the images of an archive into the containerd at containerdAddress (its
// socket), unpacked for pods. It takes both the OCI image-layout tarballs Ensure writes
// and `docker load` tarballs such as `make image` writes (bin/image/mooring.tar); the
// names the images get are those ArchiveNames returns.
func Import(ctx context.Context, ctrPath, containerdAddress, archivePath string) error {
	return ctr(ctx, ctrPath, containerdAddress, "images", "import", archivePath)
}

// ImportAs imports an archive that holds one image, as Import does, and names it ref
// as well: for an image whose archive's own name is not the one the pods use, such as
// the operator's, tagged with `git describe`.
func ImportAs(ctx context.Context, ctrPath, containerdAddress, archivePath, ref string) error {
	names, err := ArchiveNames(archivePath)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return fmt.Errorf("nodeimage: import %s as %s: the archive names %d images (%s), want one", archivePath, ref, len(names), strings.Join(names, ", "))
	}
	if err := Import(ctx, ctrPath, containerdAddress, archivePath); err != nil {
		return err
	}
	if names[0] == ref {
		return nil
	}
	return ctr(ctx, ctrPath, containerdAddress, "images", "tag", "--force", names[0], ref)
}

func ctr(ctx context.Context, ctrPath, address string, args ...string) error {
	args = append([]string{"--address", address, "--namespace", Namespace}, args...)
	out, err := exec.CommandContext(ctx, ctrPath, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nodeimage: ctr %s: %w: %s", strings.Join(args, " "), err, errorLines(string(out))[0])
	}
	return nil
}

// ArchiveNames returns the names `ctr images import` gives the images of an archive
// (checked with containerd 1.6). From an OCI image layout: each index entry's
// io.containerd.image.name annotation, else its org.opencontainers.image.ref.name when
// that is a full reference (an entry whose ref.name is only a tag, "1.37", would be
// named "import-<date>:1.37", and one with neither is not named: both are left out).
// From a `docker load` tarball: each RepoTags entry, normalised as containerd does
// (busybox:1.37 is docker.io/library/busybox:1.37).
func ArchiveNames(archivePath string) ([]string, error) {
	f, err := os.Open(archivePath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("nodeimage: %s holds neither index.json (OCI layout) nor manifest.json (docker load)", archivePath)
		}
		if err != nil {
			return nil, fmt.Errorf("nodeimage: read %s: %w", archivePath, err)
		}
		switch strings.TrimPrefix(h.Name, "./") {
		case "index.json":
			var index v1.IndexManifest
			if err := json.NewDecoder(tr).Decode(&index); err != nil {
				return nil, fmt.Errorf("nodeimage: %s: index.json: %w", archivePath, err)
			}
			var names []string
			for _, m := range index.Manifests {
				if n := m.Annotations[AnnotationContainerdName]; n != "" {
					names = append(names, n)
				} else if n := m.Annotations[AnnotationRefName]; strings.ContainsAny(n, "/:@") {
					names = append(names, n)
				}
			}
			return names, nil
		case "manifest.json":
			var manifest []struct{ RepoTags []string }
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				return nil, fmt.Errorf("nodeimage: %s: manifest.json: %w", archivePath, err)
			}
			var names []string
			for _, m := range manifest {
				for _, t := range m.RepoTags {
					n, err := containerdName(t)
					if err != nil {
						return nil, fmt.Errorf("nodeimage: %s: %w", archivePath, err)
					}
					names = append(names, n)
				}
			}
			return names, nil
		}
	}
}

// containerdName is the full form of a Docker reference that containerd stores: with
// its registry (docker.io, not the index.docker.io go-containerregistry says) and, on
// Docker Hub, the library/ of official images.
func containerdName(ref string) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("image name %q: %w", ref, err)
	}
	registry := tag.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + tag.RepositoryStr() + ":" + tag.TagStr(), nil
}

// hostTools are the programs building and importing images run, with the Debian
// package that provides each.
var hostTools = []struct{ program, debianPackage string }{
	{"mmdebstrap", "mmdebstrap"},
	{"dpkg-deb", "dpkg"},
	{"ctr", "containerd"},
}

// Missing names the host tools that building and importing images need and PATH lacks,
// each with the command that installs it, e.g. "mmdebstrap (apt-get install
// mmdebstrap)". It is empty when everything is there.
func Missing() []string {
	var missing []string
	for _, t := range hostTools {
		if _, err := exec.LookPath(t.program); err != nil {
			missing = append(missing, fmt.Sprintf("%s (apt-get install %s)", t.program, t.debianPackage))
		}
	}
	return missing
}
