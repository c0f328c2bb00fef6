package webhook

import (
	"context"
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// The requester's rights decide what an object's pods read. Mooring creates pods with its
// own rights, which reach every Secret in the cluster; without this check a user who may
// not read a Secret could name it in an App's spec.envFrom and read it from the pod's
// environment (a confused deputy). So at admission every Secret, ConfigMap and claim an
// object makes its pods (or Mooring's Jobs) read is checked with a SubjectAccessReview for
// the user making the request: `get` on that object. Every requester is checked alike,
// Mooring's own ServiceAccount and system:masters too: the API server answers for each.
// Nothing is cached across requests: rights change, and a review is cheap.

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// Binding targets are read to find the credentials Secret a binding projects.
// +kubebuilder:rbac:groups=mooring.dev,resources=databaseclusters;cacheinstances,verbs=get

// Reviewer creates SubjectAccessReviews: the manager's client.
type Reviewer interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// objectRef is one object the admitted object makes its pods read, at the field that
// names it.
type objectRef struct {
	path                  *field.Path
	group, resource, name string
	// why says, when the field does not name the object itself, how it reaches the pods.
	why string
	// binding is the kind of the service a spec.bindings entry names: its credentials
	// Secret is resolved (resolveBindings) once the binding is known to be new.
	binding string
}

// key is the same for two references to the same object.
func (r objectRef) key() string { return r.group + "/" + r.resource + "/" + r.name }

func secretRef(path *field.Path, name string) objectRef {
	return objectRef{path: path, resource: "secrets", name: name}
}

func configMapRef(path *field.Path, name string) objectRef {
	return objectRef{path: path, resource: "configmaps", name: name}
}

// appReferences are the Secrets and ConfigMaps an App's container reads through its
// environment, and the services its bindings project (whose Secrets resolveBindings adds).
// The App has no volumes of its own; spec.expose.tls.secretName is read by the ingress
// controller, which serves only its certificate, not by the App's pods.
func appReferences(app *mooringv1.App) []objectRef {
	var refs []objectRef
	env := field.NewPath("spec", "env")
	for i, e := range app.Spec.Env {
		if e.ValueFrom == nil {
			continue
		}
		p := env.Index(i).Child("valueFrom")
		if s := e.ValueFrom.SecretKeyRef; s != nil {
			refs = append(refs, secretRef(p.Child("secretKeyRef", "name"), s.Name))
		}
		if c := e.ValueFrom.ConfigMapKeyRef; c != nil {
			refs = append(refs, configMapRef(p.Child("configMapKeyRef", "name"), c.Name))
		}
	}
	envFrom := field.NewPath("spec", "envFrom")
	for i, e := range app.Spec.EnvFrom {
		if s := e.SecretRef; s != nil {
			refs = append(refs, secretRef(envFrom.Index(i).Child("secretRef", "name"), s.Name))
		}
		if c := e.ConfigMapRef; c != nil {
			refs = append(refs, configMapRef(envFrom.Index(i).Child("configMapRef", "name"), c.Name))
		}
	}
	bindings := field.NewPath("spec", "bindings")
	for i, b := range app.Spec.Bindings {
		resource := "databaseclusters"
		if b.Ref.Kind == mooringv1.BindingKindCacheInstance {
			resource = "cacheinstances"
		}
		refs = append(refs, objectRef{path: bindings.Index(i).Child("ref", "name"), group: mooringv1.GroupVersion.Group,
			resource: resource, name: b.Ref.Name, binding: b.Ref.Kind})
	}
	return refs
}

// databaseClusterReferences are the Secret a DatabaseCluster's pods take their
// credentials from, when the spec names one, and the Backup it is restored from. The
// default "<name>-credentials" is not checked: Mooring generates it for the cluster, and
// checking it would keep every user who may not read Secrets from creating databases.
func databaseClusterReferences(db *v1beta1.DatabaseCluster) []objectRef {
	var refs []objectRef
	if name := db.Spec.SecretName; name != "" && name != v1beta1.CredentialsSecretName(db.Name) {
		refs = append(refs, secretRef(field.NewPath("spec", "secretName"), name))
	}
	if b := db.Spec.Bootstrap; b != nil && b.Backup != nil {
		refs = append(refs, objectRef{path: field.NewPath("spec", "bootstrap", "backup", "name"),
			group: mooringv1.GroupVersion.Group, resource: "backups", name: b.Backup.Name})
	}
	return refs
}

// backupReferences are the claim a Backup's Jobs write the dumps to, when it is one the
// user has, and the DatabaseCluster they dump. The cluster's credentials Secret, which the
// dump Job reads, is not checked: the Job is Mooring's and puts only the dump, in the
// Backup's volume, within the user's reach.
func backupReferences(b *mooringv1.Backup) []objectRef {
	refs := []objectRef{{path: field.NewPath("spec", "databaseRef", "name"),
		group: mooringv1.GroupVersion.Group, resource: "databaseclusters", name: b.Spec.DatabaseRef.Name}}
	if c := b.Spec.Storage.ExistingClaim; c != "" {
		refs = append(refs, objectRef{path: field.NewPath("spec", "storage", "existingClaim"),
			resource: "persistentvolumeclaims", name: c})
	}
	return refs
}

// newReferences is refs without those old already had. On an update only references that
// are new or changed are checked: one the object already had was checked when it was
// added, perhaps for another user, and must not block an unrelated edit by someone who
// may not read it (a scale, a label, an image bump). old is nil on create.
func newReferences(refs, old []objectRef) []objectRef {
	had := map[string]bool{}
	for _, r := range old {
		had[r.key()] = true
	}
	var out []objectRef
	for _, r := range refs {
		if !had[r.key()] {
			out = append(out, r)
		}
	}
	return out
}

// resolveBindings adds, after each binding in refs, the credentials Secret its service
// projects into the pods: a DatabaseCluster's spec.secretName (the default
// "<name>-credentials" when the cluster does not exist yet or names none), a
// CacheInstance's published one, if any; and the binding's ConfigMap once the service
// has published it.
func resolveBindings(ctx context.Context, reader client.Reader, ns string, refs []objectRef) ([]objectRef, error) {
	var out []objectRef
	for _, r := range refs {
		out = append(out, r)
		if r.binding == "" || len(validation.IsDNS1123Subdomain(r.name)) > 0 {
			continue // a name that is no object's is refused (referenceErrors, the children's dry run), not looked up
		}
		if reader == nil {
			return nil, errors.New("the webhook has no reader to look up binding targets with")
		}
		var secret string
		var status *v1beta1.ServiceBindingStatus
		key := client.ObjectKey{Namespace: ns, Name: r.name}
		switch r.binding {
		case mooringv1.BindingKindDatabaseCluster:
			db := &v1beta1.DatabaseCluster{}
			switch err := reader.Get(ctx, key, db); {
			case apierrors.IsNotFound(err):
				secret = v1beta1.CredentialsSecretName(r.name)
			case err != nil:
				return nil, fmt.Errorf("look up DatabaseCluster %s/%s for %s: %w", ns, r.name, r.path, err)
			default:
				secret, status = db.Spec.SecretName, db.Status.Binding
				if secret == "" {
					secret = v1beta1.CredentialsSecretName(r.name)
				}
			}
		case mooringv1.BindingKindCacheInstance:
			ci := &mooringv1.CacheInstance{}
			switch err := reader.Get(ctx, key, ci); {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, fmt.Errorf("look up CacheInstance %s/%s for %s: %w", ns, r.name, r.path, err)
			case ci.Status.Binding != nil:
				status = &v1beta1.ServiceBindingStatus{Name: ci.Status.Binding.Name, SecretName: ci.Status.Binding.SecretName}
				secret = status.SecretName
			}
		}
		why := fmt.Sprintf("the credentials of %s %s, which the binding projects into the pods", r.binding, r.name)
		if secret != "" {
			out = append(out, objectRef{path: r.path, resource: "secrets", name: secret, why: why})
		}
		if status != nil && status.Name != "" {
			out = append(out, objectRef{path: r.path, resource: "configmaps", name: status.Name,
				why: fmt.Sprintf("the binding entries of %s %s", r.binding, r.name)})
		}
	}
	return out, nil
}

// checkReferences asks the API server, for each reference, whether the user of the
// admission request in ctx may get that object in namespace ns, and returns a field error
// for each one the user may not. The error is for a review that could not be made.
func checkReferences(ctx context.Context, reviewer Reviewer, ns string, refs []objectRef) (field.ErrorList, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("no admission request to take the requesting user from: %w", err)
	}
	if reviewer == nil {
		return nil, errors.New("the webhook has no client to create SubjectAccessReviews with")
	}
	user := req.UserInfo
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	allowed := map[string]bool{} // per request only: the same object named twice is asked once
	var errs field.ErrorList
	for _, r := range refs {
		ok, seen := allowed[r.key()]
		if !seen {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "get", Group: r.group, Resource: r.resource, Name: r.name,
				},
			}}
			if err := reviewer.Create(ctx, sar); err != nil {
				return nil, fmt.Errorf("review whether %s may get %s %s/%s (%s): %w", user.Username, r.resource, ns, r.name, r.path, err)
			}
			ok = sar.Status.Allowed && !sar.Status.Denied
			allowed[r.key()] = ok
		}
		if ok {
			continue
		}
		resource := r.resource
		if r.group != "" {
			resource += "." + r.group
		}
		msg := fmt.Sprintf("user %s may not get %s %q in namespace %s", user.Username, resource, r.name, ns)
		if r.why != "" {
			msg += " (" + r.why + ")"
		}
		errs = append(errs, field.Forbidden(r.path, msg))
	}
	return errs, nil
}
