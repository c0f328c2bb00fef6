package webhook

import (
	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateImage is how every kind checks a container image reference (an App's
// spec.image, a CacheInstance's): what the container runtime can pull, so that a typo
// such as an upper-case repository (Memcached:1.6) is refused here and does not leave the
// pods in InvalidImageName.
func validateImage(path *field.Path, image string) field.ErrorList {
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return field.ErrorList{field.Invalid(path, image,
			"must be an image reference such as nginx:1.27 or registry.example.com/team/api@sha256:<digest>: "+err.Error())}
	}
	return nil
}
