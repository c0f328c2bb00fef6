package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// kind is one of Mooring's kinds as the commands name it: api/v1's KindInfo (its
// plural, singular, short names and their .mooring.dev forms, as kubectl takes them) and
// the plugin's own shorter names.
type kind struct {
	// Name is the canonical lower-case name used in KIND/NAME and in output: the singular.
	Name    string
	Kind    string
	aliases []string
	gvk     schema.GroupVersionKind
}

// extraAliases are names the plugin accepts beyond the CRDs'.
var extraAliases = map[string][]string{
	mooringv1.KindCacheInstance:   {"cache", "caches"},
	mooringv1.KindDatabaseCluster: {"db"},
}

// kinds are api/v1's Kinds, in its order.
var kinds = func() []kind {
	var out []kind
	for _, k := range mooringv1.Kinds() {
		out = append(out, kind{Name: k.Singular, Kind: k.Kind, gvk: k.GroupVersionKind(),
			aliases: append(k.Names(), extraAliases[k.Kind]...)})
	}
	return out
}()

// newObj is an empty object of the kind, at the version the plugin reads.
func (k kind) newObj() client.Object {
	obj, err := Scheme.New(k.gvk)
	if err != nil {
		panic(fmt.Sprintf("the plugin's scheme does not know %s: %v", k.gvk, err)) // api/v1's Kinds and Scheme disagree
	}
	return obj.(client.Object)
}

// newList is an empty list of the kind.
func (k kind) newList() client.ObjectList {
	list, err := Scheme.New(k.gvk.GroupVersion().WithKind(k.Kind + "List"))
	if err != nil {
		panic(fmt.Sprintf("the plugin's scheme does not know %sList: %v", k.gvk, err))
	}
	return list.(client.ObjectList)
}

// lookupKind finds a kind by its name, kind or an alias, case-insensitively.
func lookupKind(s string) (kind, bool) {
	s = strings.ToLower(s)
	for _, k := range kinds {
		if s == k.Name || s == strings.ToLower(k.Kind) {
			return k, true
		}
		for _, a := range k.aliases {
			if s == a {
				return k, true
			}
		}
	}
	return kind{}, false
}

// ref is a parsed KIND/NAME.
type ref struct {
	kind kind
	name string
}

func (r ref) String() string { return r.kind.Name + "/" + r.name }

// parseRef parses KIND/NAME.
func parseRef(s string) (ref, error) {
	kindName, name, ok := strings.Cut(s, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return ref{}, fmt.Errorf("%q is not KIND/NAME (e.g. app/hello, databasecluster/orders)", s)
	}
	k, ok := lookupKind(kindName)
	if !ok {
		return ref{}, fmt.Errorf("unknown kind %q: one of %s", kindName, kindNames())
	}
	return ref{kind: k, name: name}, nil
}

// kindNames lists the kinds' names for a message: "app, cacheinstance, ...".
func kindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// completeRef completes KIND/ and then the names of that kind in the namespace; only
// is the kind allowed (e.g. backup for `backup NAME`), or "" for any.
func (o *Options) completeRef(only string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if only != "" {
			k, _ := lookupKind(only)
			return o.names(cmd.Context(), k, ""), cobra.ShellCompDirectiveNoFileComp
		}
		kindName, _, hasSlash := strings.Cut(toComplete, "/")
		if !hasSlash {
			out := make([]cobra.Completion, 0, len(kinds))
			for _, k := range kinds {
				out = append(out, k.Name+"/")
			}
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		k, ok := lookupKind(kindName)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.names(cmd.Context(), k, kindName+"/"), cobra.ShellCompDirectiveNoFileComp
	}
}

// names lists the objects of kind k in the namespace, each prefixed.
func (o *Options) names(ctx context.Context, k kind, prefix string) []cobra.Completion {
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := o.client()
	if err != nil {
		return nil
	}
	ns, err := o.namespace()
	if err != nil {
		return nil
	}
	list := k.newList()
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []cobra.Completion
	_ = eachItem(list, func(obj client.Object) { out = append(out, prefix+obj.GetName()) })
	sort.Strings(out)
	return out
}
