package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/version"
)

// LeaseName is the operator's leader election lease (cmd/mooring: LeaderElectionID).
const LeaseName = "mooring.dev"

// operatorLabel selects the operator's Deployment (config/manager, and the chart's).
var operatorLabel = client.MatchingLabels{"app.kubernetes.io/name": "mooring"}

// DefaultOperatorNamespace is where config/default and the local cluster run the operator;
// a Helm release runs it in the release's namespace.
const DefaultOperatorNamespace = "mooring-system"

// findOperatorNamespace says where the operator runs when --operator-namespace is not
// given, and how it knows: the namespace of the Deployment labelled
// app.kubernetes.io/name=mooring (any namespace: helm installs into the release's);
// else that of the leader lease (an operator outside the cluster, make run); else
// mooring-system. ambiguous is set when Deployments were found in several namespaces.
func findOperatorNamespace(ctx context.Context, c client.Reader) (ns, how string, ambiguous bool) {
	deps := &appsv1.DeploymentList{}
	depErr := c.List(ctx, deps, operatorLabel)
	if depErr == nil && len(deps.Items) > 0 {
		var nss []string
		for _, d := range deps.Items {
			if !slices.Contains(nss, d.Namespace) {
				nss = append(nss, d.Namespace)
			}
		}
		slices.Sort(nss)
		if len(nss) == 1 {
			return nss[0], fmt.Sprintf("the namespace of Deployment %s, labelled app.kubernetes.io/name=mooring", deps.Items[0].Name), false
		}
		return nss[0], fmt.Sprintf("Deployments labelled app.kubernetes.io/name=mooring run in namespaces %s; using the first", strings.Join(nss, ", ")), true
	}
	leases := &coordinationv1.LeaseList{}
	leaseErr := c.List(ctx, leases, client.MatchingFields{"metadata.name": LeaseName})
	if leaseErr == nil && len(leases.Items) > 0 {
		return leases.Items[0].Namespace, fmt.Sprintf("no Deployment labelled app.kubernetes.io/name=mooring; the namespace of the leader lease %s", LeaseName), len(leases.Items) > 1
	}
	why := "no Deployment labelled app.kubernetes.io/name=mooring and no lease " + LeaseName + " in any namespace"
	if depErr != nil || leaseErr != nil {
		why = "cannot look for the operator's Deployment or lease in every namespace (" + errors.Join(depErr, leaseErr).Error() + ")"
	}
	return DefaultOperatorNamespace, why + "; the default", false
}

// operatorNamespaceUsage is the help of doctor's and version's --operator-namespace;
// when it is empty, findOperatorNamespace decides.
const operatorNamespaceUsage = "Namespace of the operator (its Deployment, leader lease, webhook Secret). When not given, the namespace of the Deployment labelled app.kubernetes.io/name=mooring in any namespace, else of the leader lease, else " + DefaultOperatorNamespace + "."

// checkOperator checks who holds the leader lease and since when, and that the lease is
// being renewed; and, when the operator runs as a Deployment, that its replicas are ready.
func checkOperator(ctx context.Context, env *doctorEnv) []Finding {
	out := []Finding{env.checkLease(ctx)}
	deps := &appsv1.DeploymentList{}
	if err := env.c.List(ctx, deps, client.InNamespace(env.operatorNamespace), operatorLabel); err != nil {
		return append(out, fail("operator deployment", "", "list Deployments in %s: %v", env.operatorNamespace, err))
	}
	for _, d := range deps.Items {
		check := "operator deployment " + d.Name
		want := ptr.Deref(d.Spec.Replicas, 1)
		if d.Status.ReadyReplicas < want {
			out = append(out, fail(check, fmt.Sprintf("kubectl -n %s describe deployment %s; kubectl -n %s logs deploy/%s", d.Namespace, d.Name, d.Namespace, d.Name),
				"%d/%d replicas ready", d.Status.ReadyReplicas, want))
			continue
		}
		out = append(out, pass(check, "%d/%d replicas ready, image %s", d.Status.ReadyReplicas, want, operatorImage(&d)))
	}
	return out
}

// checkLease reads the leader lease. A lease not renewed within its duration means no
// operator is running (or none can reach the API server).
func (env *doctorEnv) checkLease(ctx context.Context) Finding {
	check := "operator leader lease"
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: env.operatorNamespace, Name: LeaseName}
	if err := env.c.Get(ctx, key, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return warn(check, "the shipped manifests run the operator with --leader-elect; an operator started without it (make run) holds no lease",
				"no lease %s: leader election is off, or no operator has ever run", key)
		}
		return fail(check, "", "read lease %s: %v", key, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" || lease.Spec.RenewTime == nil {
		return fail(check, env.fixOperatorDown(), "lease %s is held by nobody (released by the last leader): the operator is not running", key)
	}
	leaseDuration := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 15)) * time.Second
	renewed := env.now.Sub(lease.Spec.RenewTime.Time)
	since := ""
	if lease.Spec.AcquireTime != nil {
		since = fmt.Sprintf(" since %s (%s ago)", lease.Spec.AcquireTime.UTC().Format(time.RFC3339), duration.HumanDuration(env.now.Sub(lease.Spec.AcquireTime.Time)))
	}
	if renewed > leaseDuration {
		return fail(check, env.fixOperatorDown(), "held by %s%s but last renewed %s ago (lease duration %s): the operator is not running",
			holder, since, duration.HumanDuration(renewed), leaseDuration)
	}
	return pass(check, "held by %s%s, renewed %s ago", holder, since, duration.HumanDuration(max(renewed, 0)))
}

// operatorImage is the image of the Deployment's manager container.
func operatorImage(d *appsv1.Deployment) string {
	cs := d.Spec.Template.Spec.Containers
	for _, c := range cs {
		if c.Name == "manager" {
			return c.Image
		}
	}
	if len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// imageTag is the tag (or digest) of an image reference, or the reference itself.
func imageTag(image string) string {
	if i := strings.LastIndexByte(image, '@'); i >= 0 {
		return image[i+1:]
	}
	// A colon after the last slash starts the tag; one before it is a registry's port.
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[i+1:]
	}
	return image
}

// checkVersions compares the plugin's version with the running operator's.
func checkVersions(ctx context.Context, env *doctorEnv) []Finding {
	const check = "versions"
	plugin := version.Get().Version
	op, err := operatorVersion(ctx, env.c, env.operatorNamespace)
	switch {
	case err != nil:
		return []Finding{fail(check, "", "%v", err)}
	case op.Version == "":
		return []Finding{pass(check, "plugin %s; operator version unknown (%s); the CRDs match this plugin (see crd checks)", plugin, op.Note)}
	case op.Version != plugin && plugin != version.DevVersion:
		return []Finding{warn(check, "use the plugin of the operator's release", "plugin %s, operator %s", plugin, op)}
	}
	return []Finding{pass(check, "plugin %s, operator %s", plugin, op)}
}
