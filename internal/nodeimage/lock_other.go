//go:build !unix

package nodeimage

import (
	"context"
	"errors"
)

// lock needs flock, which only Unix systems have; nothing else builds these images
// (mmdebstrap is Debian's) anyway.
func lock(context.Context, string) (func(), error) {
	return nil, errors.New("building node images needs Linux")
}
