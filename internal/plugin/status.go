package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/objecttree"
)

// statusOptions are the flags of `status`.
type statusOptions struct {
	*Options
	output         string
	allNamespaces  bool
	showConditions bool
}

func newStatusCommand(o *Options) *cobra.Command {
	so := &statusOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "status [KIND/NAME]",
		Short: "Show a Mooring object, or all of a namespace, as a tree of what it owns",
		Long: "Show a Mooring object and everything it owns as a tree: each line with kind, name,\n" +
			"ready/desired, phase or reason, and age. Conditions that are not True are shown with\n" +
			"their message; --show-conditions shows all. Without KIND/NAME, every Mooring object\n" +
			"of the namespace (or of all namespaces with -A).",
		Example: "  kubectl mooring status databasecluster/orders\n  kubectl mooring status -A -o yaml",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return so.run(cmd.Context(), args)
		},
		ValidArgsFunction: o.completeRef(""),
	}
	cmd.Flags().StringVarP(&so.output, "output", "o", "", "Output format: json or yaml (the same tree as data); a tree when empty.")
	cmd.Flags().BoolVarP(&so.allNamespaces, "all-namespaces", "A", false, "Show the Mooring objects of every namespace.")
	cmd.Flags().BoolVar(&so.showConditions, "show-conditions", false, "Show every condition, not only those that are not True.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]cobra.Completion{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (so *statusOptions) run(ctx context.Context, args []string) error {
	if so.output != "" && so.output != "json" && so.output != "yaml" {
		return fmt.Errorf("--output %q: use json or yaml", so.output)
	}
	c, err := so.client()
	if err != nil {
		return err
	}
	ns, err := so.namespace()
	if err != nil {
		return err
	}
	if so.allNamespaces {
		ns = ""
	}
	var target *ref
	if len(args) == 1 {
		r, err := parseRef(args[0])
		if err != nil {
			return err
		}
		if so.allNamespaces {
			return fmt.Errorf("KIND/NAME and --all-namespaces do not go together")
		}
		// Fail early with the API server's own message when the object is not there.
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name}, r.kind.newObj()); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s not found in namespace %s", r, ns)
			}
			return fmt.Errorf("get %s: %w", r, err)
		}
		target = &r
	}
	snap, err := objecttree.ReadSnapshot(ctx, c, ns)
	if err != nil {
		return err
	}
	now := so.now()
	roots := snap.Roots(now)
	if target != nil {
		roots = pick(roots, *target)
	}
	if so.BeforeRender != nil {
		so.BeforeRender(roots)
	}
	note := snap.HiddenNote()
	switch so.output {
	case "json", "yaml":
		// The data stays parseable: the note goes to standard error.
		if note != "" && so.Streams.ErrOut != nil {
			fmt.Fprintln(so.Streams.ErrOut, "Warning: "+note)
		}
		return writeData(so.Streams.Out, so.output, roots, target != nil)
	}
	if err := renderTrees(so.Streams.Out, roots, renderOptions{
		Now: now, Color: so.color(), ShowConditions: so.showConditions, Namespaces: so.allNamespaces,
	}); err != nil {
		return err
	}
	if note != "" {
		_, err = fmt.Fprintln(so.Streams.Out, "\n"+note)
	}
	return err
}

// pick keeps the tree of one object; a Backup of a database is found below it.
func pick(roots []*objecttree.Node, r ref) []*objecttree.Node {
	var found *objecttree.Node
	for _, root := range roots {
		root.Walk(func(n *objecttree.Node) {
			if found == nil && n.Kind == r.kind.Kind && n.Name == r.name {
				found = n
			}
		})
	}
	if found == nil {
		return nil
	}
	found.Namespace = roots[0].Namespace
	return []*objecttree.Node{found}
}

// writeData prints the trees as JSON or YAML: one object for KIND/NAME, else {items: [...]}.
func writeData(w io.Writer, format string, roots []*objecttree.Node, single bool) error {
	var v any = map[string]any{"items": roots}
	if single && len(roots) == 1 {
		v = roots[0]
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

// eachItem calls fn for every item of a typed list.
func eachItem(list client.ObjectList, fn func(client.Object)) error {
	return meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			fn(obj)
		}
		return nil
	})
}
