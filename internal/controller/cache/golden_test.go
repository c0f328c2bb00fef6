package cache

import (
	"path/filepath"
	"testing"

	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/golden"
)

// Existing CacheInstances' children change only where a change means them to: the golden
// files were written by the builders before pods were spread over nodes (commit
// "controller: golden children of caches and databases"), and each later change to them
// is a reviewed diff.
func TestGoldenChildren(t *testing.T) {
	caches := map[string]*mooringv1.CacheInstance{
		"one-replica": newCache(nil),
		"three-replicas": newCache(func(c *mooringv1.CacheInstance) {
			c.Spec.Replicas = ptr.To[int32](3)
			c.Spec.MemoryMB = ptr.To[int32](256)
		}),
	}
	for name, c := range caches {
		t.Run(name, func(t *testing.T) {
			golden.JSON(t, filepath.Join("testdata", name+".golden.json"), Children(c))
		})
	}
}
