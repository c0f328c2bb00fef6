package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// imageCommand loads images into every running real node, or lists its images. The node
// pulls from no registry, so this is how an image that is not built in gets there.
func imageCommand(ctx context.Context, args []string, out io.Writer) error {
	switch args[0] {
	case "list":
		if len(args) > 1 {
			return fmt.Errorf("list takes no arguments, got %v", args[1:])
		}
		names, err := localcluster.RealNodeImages(ctx)
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintln(out, n)
		}
		return nil
	default: // load
		if len(args) < 2 {
			return fmt.Errorf("usage: %s", localcluster.ImageLoadCommand)
		}
		for _, archive := range args[1:] {
			nodes, err := localcluster.LoadImage(ctx, archive)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "mooring-dev: loaded %s into %s\n", archive, nodeList(nodes))
		}
		return nil
	}
}

// nodeList is "node a" or "nodes a, b".
func nodeList(nodes []string) string {
	if len(nodes) == 1 {
		return "node " + nodes[0]
	}
	return "nodes " + strings.Join(nodes, ", ")
}
