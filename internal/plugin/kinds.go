package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// kind is one of Mooring's kinds as the commands name it: by its name, plural, the short
// names its CRD declares (a test reads config/crd/bases) and their .mooring.dev forms.
type kind struct {
	// Name is the canonical lower-case name used in KIND/NAME and in output.
	Name    string
	Kind    string
	aliases []string
	newObj  func() client.Object
	newList func() client.ObjectList
}

var kinds = []kind{
	{Name: "app", Kind: "App", aliases: []string{"apps", "app.mooring.dev", "apps.mooring.dev"},
		newObj: func() client.Object { return &mooringv1.App{} }, newList: func() client.ObjectList { return &mooringv1.AppList{} }},
	{Name: "cacheinstance", Kind: "CacheInstance", aliases: []string{"cacheinstances", "cache", "caches", "cacheinstance.mooring.dev", "cacheinstances.mooring.dev"},
		newObj: func() client.Object { return &mooringv1.CacheInstance{} }, newList: func() client.ObjectList { return &mooringv1.CacheInstanceList{} }},
	{Name: "databasecluster", Kind: "DatabaseCluster", aliases: []string{"databaseclusters", "dbc", "db", "databasecluster.mooring.dev", "databaseclusters.mooring.dev"},
		newObj: func() client.Object { return &v1beta1.DatabaseCluster{} }, newList: func() client.ObjectList { return &v1beta1.DatabaseClusterList{} }},
	{Name: "backup", Kind: "Backup", aliases: []string{"backups", "backup.mooring.dev", "backups.mooring.dev"},
		newObj: func() client.Object { return &mooringv1.Backup{} }, newList: func() client.ObjectList { return &mooringv1.BackupList{} }},
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
		return ref{}, fmt.Errorf("unknown kind %q: one of app, cacheinstance, databasecluster, backup", kindName)
	}
	return ref{kind: k, name: name}, nil
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
