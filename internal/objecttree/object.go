package objecttree

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObjectTree is the status tree `kubectl mooring status KIND/NAME` prints, for other
// programs that show it (the portal's object pages): it reads namespace ns through c,
// so as c's user and within that user's RBAC, and returns the tree of the Mooring object
// of kind (api/v1's Kind, e.g. "App") and name, nil when there is none, and the kinds c
// may not list (whose objects are missing from the tree).
func ObjectTree(ctx context.Context, c client.Reader, ns, kind, name string, now time.Time) (*Node, []string, error) {
	snap, err := ReadSnapshot(ctx, c, ns)
	if err != nil {
		return nil, nil, err
	}
	var found *Node
	for _, root := range snap.Roots(now) {
		root.Walk(func(n *Node) {
			if found == nil && n.Kind == kind && n.Name == name {
				found = n
			}
		})
	}
	return found, snap.Hidden, nil
}
