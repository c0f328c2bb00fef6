package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/version"
)

func newVersionCommand(o *Options) *cobra.Command {
	var ns string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and that of the running operator",
		Long: "Print the plugin's version and that of the operator running in the cluster: the version the\n" +
			"leading replica publishes on its leader election lease (" + LeaseName + " in the operator's\n" +
			"namespace; reading it needs get on leases there).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.Streams.Out, "plugin:   %s\n", version.String())
			c, err := o.client()
			if err != nil {
				return err
			}
			where := ns
			if where == "" {
				where, _, _ = findOperatorNamespace(cmd.Context(), c)
			}
			op, err := operatorVersion(cmd.Context(), c, where)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Streams.Out, "operator: %s\n", op)
			return nil
		},
	}
	cmd.Flags().StringVar(&ns, "operator-namespace", "", operatorNamespaceUsage)
	return cmd
}

// operatorBuild is what the plugin learns of the running operator's build.
type operatorBuild struct {
	// Version and Revision are the leader's; Version is an image tag when only the
	// operator's Deployment tells it (an operator that publishes no version); both are ""
	// when not known.
	Version, Revision string
	// Namespace is the operator's.
	Namespace string
	// Leader is the lease's holder; "" when not known.
	Leader string
	// Note says where Version came from when not from the leader, or why it is not known.
	Note string
}

// String is the `version` line: "v0.3.0 (abc1234def56), leader <holder> (namespace x)",
// or what is known instead and why.
func (b operatorBuild) String() string {
	switch {
	case b.Version == "":
		return "unknown (" + b.Note + ")"
	case b.Revision != "":
		return fmt.Sprintf("%s (%s), leader %s (namespace %s)", b.Version,
			version.Info{Revision: b.Revision}.ShortRevision(), b.Leader, b.Namespace)
	}
	return fmt.Sprintf("%s (%s; namespace %s)", b.Version, b.Note, b.Namespace)
}

// operatorVersion reads the version the running operator publishes: labels its leader
// election puts on the lease (internal/version/lease.go says why there). The labels are
// the holder's when their host is the one the holder's identity ("<host>_<uuid>") starts
// with; an older operator that sets none leaves labels of an earlier holder, or none.
// Without them, the tag of the operator Deployment's image is the best guess, and said to
// be one.
func operatorVersion(ctx context.Context, c client.Reader, ns string) (operatorBuild, error) {
	out := operatorBuild{Namespace: ns}
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: ns, Name: LeaseName}
	err := c.Get(ctx, key, lease)
	switch {
	case apierrors.IsNotFound(err):
		out.Note = fmt.Sprintf("no leader lease %s: no operator runs with --leader-elect (make run does not; its start log line names its version)", key)
	case err != nil:
		return out, fmt.Errorf("read the leader lease %s: %w", key, err)
	default:
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		if leaseExpired(lease, time.Now()) {
			// A leader that was killed, or whose release lost a race with its own renewal,
			// never clears the holder: once the lease has expired nobody holds it, as
			// the next candidate's leader election sees it.
			holder = ""
		}
		l := lease.Labels
		host, v, rev := l[version.LeaseHostLabel], l[version.LeaseVersionLabel], l[version.LeaseRevisionLabel]
		published := v != "" && host != "" && strings.HasPrefix(holder, host)
		switch {
		case holder == "" && v != "":
			out.Note = fmt.Sprintf("lease %s is held by nobody: no operator runs; the last leader ran %s (%s)", key, v, rev)
		case holder == "":
			out.Note = fmt.Sprintf("lease %s is held by nobody: no operator runs", key)
		case published:
			out.Version, out.Revision, out.Leader = v, rev, holder
			return out, nil
		default:
			out.Leader = holder
			out.Note = fmt.Sprintf("the leader %s publishes no version on lease %s", holder, key)
		}
	}
	// An operator of a release before the lease labels: its Deployment's image tag.
	deps := &appsv1.DeploymentList{}
	if err := c.List(ctx, deps, client.InNamespace(ns), operatorLabel); err != nil || len(deps.Items) == 0 || out.Leader == "" {
		return out, nil
	}
	out.Version = imageTag(operatorImage(&deps.Items[0]))
	out.Note = "the image tag of Deployment " + deps.Items[0].Name + "; " + out.Note
	return out, nil
}

// leaseExpired reports whether the lease's holder let it run out: its last renewal is
// older than its duration.
func leaseExpired(lease *coordinationv1.Lease, now time.Time) bool {
	spec := lease.Spec
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return false
	}
	return now.After(spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second))
}
