package services

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/models"
)

// Kinds are the Mooring resources the portal serves, by their path segment (the plural),
// at the version Mooring reads and writes: api/v1's Kinds.
var Kinds = func() map[string]schema.GroupVersionKind {
	m := map[string]schema.GroupVersionKind{}
	for _, k := range mooringv1.Kinds() {
		m[k.Plural] = k.GroupVersionKind()
	}
	return m
}()

// kindPlurals is the list of the kinds' path segments for a message, in api/v1's order.
var kindPlurals = func() string {
	var p []string
	for _, k := range mooringv1.Kinds() {
		p = append(p, k.Plural)
	}
	return strings.Join(p, ", ")
}()

// Resources handles Mooring resources as the calling user. It checks nothing itself:
// each call impersonates the caller and the API server's answer (403, 404, 409, 422
// with every field error) is returned unchanged as an *apierrors.StatusError.
type Resources struct {
	imp   *cluster.Impersonator
	authz *Authz
	// teams tells the teams of a caller, whose namespaces it may use too (none when nil).
	teams *Teams
	now   func() time.Time
}

// NewResources returns the resources service.
func NewResources(imp *cluster.Impersonator, authz *Authz) *Resources {
	return &Resources{imp: imp, authz: authz, now: time.Now}
}

// WithTeams returns r, which from now on counts the namespaces of the caller's teams
// among those the caller may use.
func (r *Resources) WithTeams(t *Teams) *Resources {
	r.teams = t
	return r
}

// kindIn checks the namespace and kind of a path and returns the kind's GVK.
func kindIn(namespace, kind string) (schema.GroupVersionKind, error) {
	if err := validNamespace(namespace); err != nil {
		return schema.GroupVersionKind{}, err
	}
	gvk, ok := Kinds[kind]
	if !ok {
		return gvk, &Error{Kind: KindNotFound, Message: fmt.Sprintf("unknown kind %q: use one of %s", kind, kindPlurals)}
	}
	return gvk, nil
}

func (r *Resources) resource(caller *Caller, namespace, kind string) (ri resourceClient, err error) {
	gvk, err := kindIn(namespace, kind)
	if err != nil {
		return ri, err
	}
	dyn, err := r.imp.Dynamic(caller.Identity)
	if err != nil {
		return ri, err
	}
	gvr := gvk.GroupVersion().WithResource(kind)
	return resourceClient{c: dyn.Resource(gvr).Namespace(namespace), gvk: gvk, namespace: namespace}, nil
}

// Page selects one page of a list: at most Limit objects (0: all) from where the
// Continue token of the previous page left off. Both go to the API server as they are.
type Page struct {
	Limit    int64
	Continue string
}

// MaxPageLimit is the largest page a list may ask for.
const MaxPageLimit = 500

// List lists the kind in namespace.
func (r *Resources) List(ctx context.Context, caller *Caller, namespace, kind string) (*unstructured.UnstructuredList, error) {
	return r.ListPage(ctx, caller, namespace, kind, Page{})
}

// ListPage lists one page of the kind in namespace; the list's metadata.continue
// fetches the next one.
func (r *Resources) ListPage(ctx context.Context, caller *Caller, namespace, kind string, page Page) (*unstructured.UnstructuredList, error) {
	gvk, err := kindIn(namespace, kind)
	if err != nil {
		return nil, err
	}
	return listLean(ctx, r.imp, caller.Identity, gvk.GroupVersion(), namespace, kind, page)
}

// ListPageJSON is ListPage's list as the JSON the API answers, made from the API
// server's bytes without decoding them.
func (r *Resources) ListPageJSON(ctx context.Context, caller *Caller, namespace, kind string, page Page) ([]byte, error) {
	gvk, err := kindIn(namespace, kind)
	if err != nil {
		return nil, err
	}
	return listLeanJSON(ctx, r.imp, caller.Identity, gvk.GroupVersion(), namespace, kind, page)
}

// GetJSON is Get's object as the JSON the API answers, made from the API server's
// bytes without decoding them.
func (r *Resources) GetJSON(ctx context.Context, caller *Caller, namespace, kind, name string) ([]byte, error) {
	gvk, err := kindIn(namespace, kind)
	if err != nil {
		return nil, err
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	return getLeanJSON(ctx, r.imp, caller.Identity, gvk.GroupVersion(), namespace, kind, name)
}

// Get reads one object.
func (r *Resources) Get(ctx context.Context, caller *Caller, namespace, kind, name string) (*unstructured.Unstructured, error) {
	rc, err := r.resource(caller, namespace, kind)
	if err != nil {
		return nil, err
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	return lean(rc.c.Get(ctx, name, metav1.GetOptions{}))
}

// lean drops managedFields from an object the API server returned: they are the API
// server's bookkeeping of field owners, often larger than the object, and no client
// of the portal needs them.
func lean(obj *unstructured.Unstructured, err error) (*unstructured.Unstructured, error) {
	if obj != nil {
		obj.SetManagedFields(nil)
	}
	return obj, err
}

// validName refuses an object name that is no DNS subdomain: ".." or "a/b" would make
// another path of the API server, not another name.
func validName(name string) error {
	if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
		return invalid(field("name", "%q is not a valid object name: %s", name, strings.Join(problems, "; ")))
	}
	return nil
}

// validNamespace refuses a namespace that is no DNS label: an empty one would list
// every namespace's objects, ".." a path the API server never meant.
func validNamespace(ns string) error {
	if problems := validation.IsDNS1123Label(ns); len(problems) > 0 {
		return invalid(field("namespace", "%q is not a valid namespace name: %s", ns, strings.Join(problems, "; ")))
	}
	return nil
}

// Create creates body (a Kubernetes object of the kind) in namespace. Unknown fields
// are refused by the API server (strict field validation).
func (r *Resources) Create(ctx context.Context, caller *Caller, namespace, kind string, body map[string]any) (*unstructured.Unstructured, error) {
	rc, err := r.resource(caller, namespace, kind)
	if err != nil {
		return nil, err
	}
	obj, err := rc.object(body, "")
	if err != nil {
		return nil, err
	}
	return lean(rc.c.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}))
}

// Update replaces the object name with body.
func (r *Resources) Update(ctx context.Context, caller *Caller, namespace, kind, name string, body map[string]any) (*unstructured.Unstructured, error) {
	rc, err := r.resource(caller, namespace, kind)
	if err != nil {
		return nil, err
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	obj, err := rc.object(body, name)
	if err != nil {
		return nil, err
	}
	return lean(rc.c.Update(ctx, obj, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict}))
}

// Patch applies a JSON merge patch (RFC 7386) to the object name.
func (r *Resources) Patch(ctx context.Context, caller *Caller, namespace, kind, name string, patch []byte) (*unstructured.Unstructured, error) {
	rc, err := r.resource(caller, namespace, kind)
	if err != nil {
		return nil, err
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	return lean(rc.c.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict}))
}

// Delete deletes the object name.
func (r *Resources) Delete(ctx context.Context, caller *Caller, namespace, kind, name string) error {
	rc, err := r.resource(caller, namespace, kind)
	if err != nil {
		return err
	}
	if err := validName(name); err != nil {
		return err
	}
	return rc.c.Delete(ctx, name, metav1.DeleteOptions{})
}

// RunBackup asks for an on-demand backup now: it sets the backup-now annotation to the
// current time, which the operator turns into one backup Job.
func (r *Resources) RunBackup(ctx context.Context, caller *Caller, namespace, name string) (*unstructured.Unstructured, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		mooringv1.BackupNowAnnotation: r.now().UTC().Format(time.RFC3339Nano),
	}}})
	if err != nil {
		return nil, err
	}
	return r.Patch(ctx, caller, namespace, mooringv1.ResourceBackups, name, patch)
}

// Events lists the events of namespace.
func (r *Resources) Events(ctx context.Context, caller *Caller, namespace string) (*corev1.EventList, error) {
	return r.EventsPage(ctx, caller, namespace, Page{})
}

// EventsPage lists one page of the events of namespace.
func (r *Resources) EventsPage(ctx context.Context, caller *Caller, namespace string, page Page) (*corev1.EventList, error) {
	if err := validNamespace(namespace); err != nil {
		return nil, err
	}
	cs, err := r.imp.Clientset(caller.Identity)
	if err != nil {
		return nil, err
	}
	l, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{Limit: page.Limit, Continue: page.Continue})
	if err != nil {
		return nil, pageError(page, err)
	}
	if l.Items == nil {
		l.Items = []corev1.Event{} // a list, never null
	}
	for i := range l.Items {
		l.Items[i].ManagedFields = nil
	}
	l.APIVersion, l.Kind = "v1", "EventList"
	return l, nil
}

// Namespaces lists the namespaces the caller may use: all of them for a caller RBAC
// lets list namespaces (admins, auditors), otherwise those of a developer's own
// namespaces and of the caller's teams' where RBAC lets the caller list Apps.
func (r *Resources) Namespaces(ctx context.Context, caller *Caller) (models.NamespaceList, error) {
	out := models.NamespaceList{Items: []string{}}
	cs, err := r.imp.Clientset(caller.Identity)
	if err != nil {
		return out, err
	}
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, ns := range list.Items {
			out.Items = append(out.Items, ns.Name)
		}
		return out, nil
	}
	if !apierrors.IsForbidden(err) {
		return out, err
	}
	var candidates []string
	if caller.User.Spec.Role == portalv1alpha1.RoleDeveloper {
		candidates = append(candidates, caller.User.Spec.Namespaces...)
	}
	if r.teams != nil {
		teams, err := r.teams.Of(ctx, caller.User)
		if err != nil {
			return out, err
		}
		for _, t := range teams {
			candidates = append(candidates, t.Namespaces...)
		}
	}
	for _, ns := range setOf(candidates) {
		ok, err := r.authz.Can(ctx, caller, "list", mooringv1.GroupVersion.Group, mooringv1.ResourceApps, ns)
		if err != nil {
			return out, err
		}
		if ok {
			out.Items = append(out.Items, ns)
		}
	}
	slices.Sort(out.Items)
	return out, nil
}

type resourceClient struct {
	c interface {
		List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
		Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
		Create(ctx context.Context, obj *unstructured.Unstructured, options metav1.CreateOptions, subresources ...string) (*unstructured.Unstructured, error)
		Update(ctx context.Context, obj *unstructured.Unstructured, options metav1.UpdateOptions, subresources ...string) (*unstructured.Unstructured, error)
		Patch(ctx context.Context, name string, pt types.PatchType, data []byte, options metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error)
		Delete(ctx context.Context, name string, options metav1.DeleteOptions, subresources ...string) error
	}
	gvk       schema.GroupVersionKind
	namespace string
}

// object turns a request body into the object to send: apiVersion and kind default to
// the route's and must match it when given, as must metadata.namespace and, for an
// update, metadata.name.
func (rc resourceClient) object(body map[string]any, name string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{Object: body}
	var bad []models.FieldError
	if v := obj.GetAPIVersion(); v == "" {
		obj.SetAPIVersion(rc.gvk.GroupVersion().String())
	} else if v != rc.gvk.GroupVersion().String() {
		bad = append(bad, field("apiVersion", "must be %s, got %q", rc.gvk.GroupVersion(), v))
	}
	if k := obj.GetKind(); k == "" {
		obj.SetKind(rc.gvk.Kind)
	} else if k != rc.gvk.Kind {
		bad = append(bad, field("kind", "must be %s, got %q", rc.gvk.Kind, k))
	}
	if ns := obj.GetNamespace(); ns == "" {
		obj.SetNamespace(rc.namespace)
	} else if ns != rc.namespace {
		bad = append(bad, field("metadata.namespace", "must be %s (the namespace of the path), got %q", rc.namespace, ns))
	}
	if name != "" {
		if n := obj.GetName(); n == "" {
			obj.SetName(name)
		} else if n != name {
			bad = append(bad, field("metadata.name", "must be %s (the name of the path), got %q", name, n))
		}
	}
	if len(bad) > 0 {
		return nil, invalid(bad...)
	}
	return obj, nil
}
