package database

import (
	"sync/atomic"

	"github.com/distribution/reference"
)

// DefaultInstanceManagerImage is the image the database pods copy their instance
// manager from when the operator is not told its own image (--instance-manager-image;
// the chart passes the operator's).
const DefaultInstanceManagerImage = "ghcr.io/mooringhq/mooring:latest"

var instanceManagerImage atomic.Pointer[string]

func init() {
	d := DefaultInstanceManagerImage
	instanceManagerImage.Store(&d)
}

// SetInstanceManagerImage makes the StatefulSets built from now on copy the instance
// manager from image, the operator's own: the manager is the operator's binary, so the
// two are released together.
func SetInstanceManagerImage(image string) error {
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return err
	}
	instanceManagerImage.Store(&image)
	return nil
}

// InstanceManagerImage is the image database pods copy the instance manager from.
func InstanceManagerImage() string { return *instanceManagerImage.Load() }
