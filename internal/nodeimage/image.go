package nodeimage

import (
	"fmt"
	"maps"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotations (on the manifest) and labels (in the config) every image carries.
const (
	AnnotationDescription = "org.opencontainers.image.description"
	AnnotationVersion     = "org.opencontainers.image.version"
	AnnotationCreated     = "org.opencontainers.image.created"
	AnnotationRefName     = "org.opencontainers.image.ref.name"
	// AnnotationStandIn is "true" on an image built in place of the upstream image its
	// reference names, "false" on one that is its own.
	AnnotationStandIn = "dev.mooring.stand-in"
	// AnnotationDebianSuite is the Debian release a stand-in's packages come from.
	AnnotationDebianSuite = "dev.mooring.debian.suite"
	// AnnotationDebianPackages lists the Spec's packages as installed,
	// "name=version name=version" (apt's own syntax for a version).
	AnnotationDebianPackages = "dev.mooring.debian.packages"
	// AnnotationContainerdName is the name `ctr images import` gives the image.
	AnnotationContainerdName = "io.containerd.image.name"
)

// installed is what a built root filesystem holds of a Spec.
type installed struct {
	// versions are the Debian versions of the Spec's packages, in its order.
	versions []string
	created  time.Time
}

// annotations are the facts every image states about itself, as manifest annotations
// and as config labels.
func annotations(s Spec, in installed) map[string]string {
	a := map[string]string{
		AnnotationDescription: s.Description,
		AnnotationRefName:     s.Ref,
		AnnotationCreated:     in.created.UTC().Format(time.RFC3339),
		AnnotationStandIn:     strconv.FormatBool(s.StandIn()),
		AnnotationVersion:     s.Tag(),
	}
	if s.Debian != nil {
		pkgs := make([]string, len(s.Debian.Packages))
		for i, p := range s.Debian.Packages {
			pkgs[i] = p + "=" + in.versions[i]
		}
		a[AnnotationVersion] = in.versions[0]
		a[AnnotationDebianSuite] = s.Debian.Suite
		a[AnnotationDebianPackages] = strings.Join(pkgs, " ")
	}
	return a
}

// image is s's image: the one gzip-compressed layer at layerPath, the run configuration
// and the annotations, for the platform this program runs on (the one mmdebstrap and
// the Go toolchain build for by default).
func image(s Spec, layerPath string, in installed) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: in.created}, CreatedBy: "mooring nodeimage " + recipeVersion, Comment: s.Description},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: in.created}
	a := annotations(s, in)
	cf.Config = v1.Config{
		Entrypoint: s.Config.Entrypoint,
		Cmd:        s.Config.Cmd,
		User:       s.Config.User,
		Env:        s.Config.Env,
		WorkingDir: s.Config.WorkingDir,
		StopSignal: s.Config.StopSignal,
		Labels:     maps.Clone(a),
	}
	if len(s.Config.ExposedPorts) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range s.Config.ExposedPorts {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	annotated, ok := mutate.Annotations(img, a).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("annotate manifest: not an image")
	}
	return annotated, nil
}
