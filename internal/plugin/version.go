package plugin

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the plugin's release, set at build time:
// go build -ldflags "-X github.com/mooringhq/mooring/internal/plugin.Version=v0.1.0".
var Version = ""

// develVersion is what a build without a release version reports.
const develVersion = "devel"

// BuildVersion is Version, or the module version and VCS revision Go recorded.
func BuildVersion() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return develVersion
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return develVersion
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return develVersion + "+" + rev
}

func newVersionCommand(o *Options) *cobra.Command {
	var ns string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the operator's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.Streams.Out, "plugin:   %s\n", BuildVersion())
			c, err := o.client()
			if err != nil {
				return err
			}
			where, looked := ns, ns
			if ns == "" {
				where, _, _ = findOperatorNamespace(cmd.Context(), c)
				looked = "any namespace"
			}
			op, err := operatorVersion(cmd.Context(), c, where)
			if err != nil {
				return err
			}
			if op == "" {
				op = "unknown (no Deployment labelled app.kubernetes.io/name=mooring in " + looked + "; the operator runs outside the cluster)"
			} else {
				op += " (namespace " + where + ")"
			}
			fmt.Fprintf(o.Streams.Out, "operator: %s\n", op)
			return nil
		},
	}
	cmd.Flags().StringVar(&ns, "operator-namespace", "", operatorNamespaceUsage)
	return cmd
}
