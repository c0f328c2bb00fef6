package objecttree

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/app"
	backupcontroller "github.com/mooringhq/mooring/internal/controller/backup"
	cachecontroller "github.com/mooringhq/mooring/internal/controller/cache"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// controllerOf is one of Mooring's controllers as the status tree sees it: the object
// whose tree it is, and every kind of child the controller makes.
type controllerOf struct {
	pkg       string // the controller's package under internal/controller
	root      client.Object
	component string
	// kinds are the kinds the controller makes: its Owned, Cached and Optional lists,
	// the kinds it creates outside them (listed by hand below), and the kind of every
	// builder of its package (builderKinds).
	kinds []client.Object
}

// The roots of the trees, one per controller, in namespace shop.
var (
	coverApp    = &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "app-uid"}}
	coverCache  = &mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: "shop", UID: "cache-uid"}}
	coverDB     = &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", UID: "db-uid"}}
	coverBackup = &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "orders-nightly", Namespace: "shop", UID: "backup-uid"}}
)

func controllers(t *testing.T) []controllerOf {
	t.Helper()
	cs := []controllerOf{
		{"app", coverApp, app.Component, slices.Concat(app.Owned, app.Optional)},
		{"cache", coverCache, cachecontroller.Component, cachecontroller.Owned},
		// The database controller also creates, outside its lists: the credentials and
		// superuser Secrets (secret.go, admin.go; no owner, they belong with the data) and
		// the credentials, restore and final snapshot Jobs (credentials.go, restore.go,
		// finalize.go; watched through Owns, not cached by these lists).
		{"database", coverDB, database.Component, slices.Concat(database.Owned, database.Cached,
			[]client.Object{&corev1.Secret{}, &batchv1.Job{}})},
		{"backup", coverBackup, backupcontroller.Component, slices.Concat(backupcontroller.Owned, backupcontroller.Cached)},
	}
	for i := range cs {
		for _, k := range builderKinds(t, cs[i].pkg) {
			if !slices.ContainsFunc(cs[i].kinds, func(o client.Object) bool { return reflect.TypeOf(o) == reflect.TypeOf(k) }) {
				cs[i].kinds = append(cs[i].kinds, k)
			}
		}
	}
	return cs
}

// builderKinds returns a new object of every Kubernetes kind that an exported function of
// internal/controller/<pkg> (not its tests) returns a pointer to: the package's builders.
// A builder added for a new kind is found here without anyone listing it.
func builderKinds(t *testing.T, pkg string) []client.Object {
	t.Helper()
	types := registeredTypes()
	dir := filepath.Join(testutil.RepoRoot(), "internal", "controller", pkg)
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Object
	seen := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name → import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := filepath.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = p
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			for _, r := range fn.Type.Results.List {
				star, ok := r.Type.(*ast.StarExpr)
				if !ok {
					continue
				}
				sel, ok := star.X.(*ast.SelectorExpr)
				if !ok {
					continue
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					continue
				}
				typ, ok := types[imports[x.Name]+"."+sel.Sel.Name]
				if !ok || seen[typ.String()] {
					continue
				}
				seen[typ.String()] = true
				out = append(out, reflect.New(typ).Interface().(client.Object))
			}
		}
	}
	return out
}

// registeredTypes maps "<import path>.<type>" to the type of every kind the plugin's
// scheme knows (built-in kinds, Mooring's, the Gateway API's).
func registeredTypes() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for gvk, typ := range Scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if _, ok := reflect.New(typ).Interface().(client.Object); ok {
			out[typ.PkgPath()+"."+typ.Name()] = typ
		}
	}
	return out
}

// addToSnapshot appends obj to the Snapshot's list of its type (a Secret as its
// metadata); false when the Snapshot has no list of that type.
func addToSnapshot(s *Snapshot, obj client.Object) bool {
	if sec, ok := obj.(*corev1.Secret); ok {
		s.Secrets = append(s.Secrets, metav1.PartialObjectMetadata{ObjectMeta: sec.ObjectMeta})
		return true
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Slice && f.Type().Elem() == reflect.TypeOf(obj).Elem() {
			f.Set(reflect.Append(f, reflect.ValueOf(obj).Elem()))
			return true
		}
	}
	return false
}

// findNode returns the node of kind and name below root's (a tree's root, or a Backup
// below its DatabaseCluster), nil when none.
func findNode(roots []*Node, root client.Object, kind, name string) *Node {
	rootKind := reflect.TypeOf(root).Elem().Name()
	var found *Node
	for _, tree := range roots {
		tree.Walk(func(r *Node) {
			if r.Kind != rootKind || r.Name != root.GetName() {
				return
			}
			r.Walk(func(n *Node) {
				if found == nil && n != r && n.Kind == kind && n.Name == name {
					found = n
				}
			})
		})
	}
	return found
}

// kindOf is obj's kind from the scheme.
func kindOf(t *testing.T, obj client.Object) schema.GroupVersionKind {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return gvk
}

// Every kind of child a controller makes is shown by `kubectl mooring status` below the
// object it is made for: owned by it (what the engine applies), or carrying its labels
// without an owner (what must outlive it, or is made while it is deleted). The kinds are
// the controllers' own lists and the kinds their builders return, so a new kind of child
// fails this test until the Snapshot lists it (ReadSnapshot) and the tree shows it.
func TestTreeShowsEveryKindMooringMakes(t *testing.T) {
	for _, c := range controllers(t) {
		for _, kind := range c.kinds {
			gvk := kindOf(t, kind)
			for _, how := range []string{"owned", "labelled"} {
				t.Run(c.pkg+"/"+gvk.Kind+"/"+how, func(t *testing.T) {
					obj := kind.DeepCopyObject().(client.Object)
					obj.SetName(strings.ToLower(gvk.Kind) + "-" + how)
					obj.SetNamespace(c.root.GetNamespace())
					obj.SetLabels(engine.Labels(c.component, c.root.GetName()))
					if how == "owned" {
						if err := controllerutil.SetControllerReference(c.root, obj, Scheme); err != nil {
							t.Fatal(err)
						}
					}
					s := snapshotOf(c.root)
					if !addToSnapshot(s, obj) {
						t.Fatalf("the Snapshot has no list of %s: ReadSnapshot must list them and the trees show them", gvk.Kind)
					}
					if findNode(s.Roots(now), c.root, gvk.Kind, obj.GetName()) == nil {
						t.Errorf("the tree of %s %s does not show the %s %s it %s", gvk.Kind, c.root.GetName(), gvk.Kind, obj.GetName(), how)
					}
				})
			}
		}
	}
}

// snapshotOf is a Snapshot holding only root.
func snapshotOf(root client.Object) *Snapshot {
	s := &Snapshot{}
	addToSnapshot(s, root.DeepCopyObject().(client.Object))
	return s
}

// ReadSnapshot lists every kind the Snapshot holds: one object of each, made in a fake
// API server, comes back in its list.
func TestReadSnapshotListsEveryKind(t *testing.T) {
	var objs []client.Object
	typ := reflect.TypeOf(Snapshot{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Slice || f.Name == "Hidden" {
			continue
		}
		var obj client.Object = &corev1.Secret{}
		if f.Name != "Secrets" {
			obj = reflect.New(f.Type.Elem()).Interface().(client.Object)
		}
		obj.SetName(strings.ToLower(f.Name))
		obj.SetNamespace("shop")
		objs = append(objs, obj)
	}
	c := fake.NewClientBuilder().WithScheme(Scheme).WithObjects(objs...).Build()
	s, err := ReadSnapshot(t.Context(), c, "shop")
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(s).Elem()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() == reflect.Slice && f.Name != "Hidden" && v.Field(i).Len() != 1 {
			t.Errorf("ReadSnapshot read %d %s, want the 1 there is", v.Field(i).Len(), f.Name)
		}
	}
}

// What the builders make, with every option that adds a child on, is shown in the tree of
// the object it is made for, each object by kind and name.
func TestTreeShowsWhatTheBuildersMake(t *testing.T) {
	ingressApp := coverApp.DeepCopy()
	ingressApp.Spec = mooringv1.AppSpec{Image: "nginx", Replicas: ptr.To(int32(3)), Port: ptr.To(int32(8080)), Config: "x = 1",
		HighAvailability: ptr.To(true),
		Autoscaling:      &mooringv1.AppAutoscaling{MaxReplicas: 6},
		Expose:           &mooringv1.AppExpose{Host: "web.example.com", TLS: &mooringv1.AppTLS{}}}
	routeApp := ingressApp.DeepCopy()
	routeApp.Name, routeApp.UID = "api", "api-uid"
	routeApp.Spec.Expose = &mooringv1.AppExpose{Host: "api.example.com", Gateway: &mooringv1.AppGatewayRef{Name: "public"}}
	cache := coverCache.DeepCopy()
	cache.Spec = mooringv1.CacheInstanceSpec{Engine: "memcached", Version: "1.6", Replicas: ptr.To(int32(2))}
	db := coverDB.DeepCopy()
	db.Spec = v1beta1.DatabaseClusterSpec{Engine: "postgresql", Version: "18", ReplicaCount: 2, SecretName: "orders-credentials",
		Bootstrap: &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: coverBackup.Name}}}
	backup := coverBackup.DeepCopy()
	backup.Spec = mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: db.Name}, Schedule: "0 3 * * *"}

	type made struct {
		root    client.Object
		obj     client.Object
		applied bool // through the engine's Apply: namespace, labels and controller reference stamped
	}
	var all []made
	apply := func(root client.Object, objs ...client.Object) {
		for _, o := range objs {
			all = append(all, made{root, o, true})
		}
	}
	create := func(root client.Object, objs ...client.Object) {
		for _, o := range objs {
			all = append(all, made{root, o, false})
		}
	}
	for _, a := range []*mooringv1.App{ingressApp, routeApp} {
		children := app.Children(a, app.Resolved{GatewayAPI: true})
		apply(a, children...)
	}
	apply(cache, cachecontroller.Children(cache)...)
	sts, err := database.StatefulSet(db)
	if err != nil {
		t.Fatal(err)
	}
	apply(db, database.Children(db)...)
	apply(db, database.NetworkPolicy(db, database.Clients{Apps: []string{ingressApp.Name}}))
	apply(db, sts, database.CredentialsJob(db, "0123456789abcdef"), database.RestoreJob(db, backup))
	vol, claim := database.SnapshotVolume(db, nil, map[string]bool{})
	create(db, database.CredentialsSecret(db, "pw"), database.AdminSecret(db, "pw"), database.FinalSnapshotJob(db, vol), claim)
	// The StatefulSet controller makes a volume per claim template and pod, with the
	// template's labels.
	for _, tmpl := range sts.Spec.VolumeClaimTemplates {
		pvc := tmpl.DeepCopy()
		pvc.Name = tmpl.Name + "-" + sts.Name + "-0"
		create(db, pvc)
	}
	dumpTarget := database.DumpTarget(db)
	apply(backup, backupcontroller.CronJob(backup, dumpTarget), backupcontroller.ManualJob(backup, dumpTarget, "now"))
	create(backup, backupcontroller.CleanupJob(backup), backupcontroller.StorageClaim(backup))

	// The fixtures exercise every kind their controllers make.
	for _, c := range controllers(t) {
		for _, kind := range c.kinds {
			want := kindOf(t, kind).Kind
			if !slices.ContainsFunc(all, func(m made) bool { return m.root.GetUID() == c.root.GetUID() && kindOf(t, m.obj).Kind == want }) &&
				!(c.pkg == "app" && slices.ContainsFunc(all, func(m made) bool { return m.root == routeApp && kindOf(t, m.obj).Kind == want })) {
				t.Errorf("no %s made for the %s controller's fixture: turn on what makes one", want, c.pkg)
			}
		}
	}

	s := &Snapshot{}
	for _, root := range []client.Object{ingressApp, routeApp, cache, db, backup} {
		addToSnapshot(s, root.DeepCopyObject().(client.Object))
	}
	for _, m := range all {
		obj := m.obj
		obj.SetNamespace(m.root.GetNamespace())
		if m.applied {
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			for k, v := range engine.Labels(componentOf(m.root), m.root.GetName()) {
				labels[k] = v
			}
			obj.SetLabels(labels)
			if err := controllerutil.SetControllerReference(m.root, obj, Scheme); err != nil {
				t.Fatal(err)
			}
		}
		if !addToSnapshot(s, obj) {
			t.Fatalf("the Snapshot has no list of %T", obj)
		}
	}
	roots := s.Roots(now)
	for _, m := range all {
		kind := kindOf(t, m.obj).Kind
		if findNode(roots, m.root, kind, m.obj.GetName()) == nil {
			t.Errorf("the tree of %s/%s does not show %s/%s", reflect.TypeOf(m.root).Elem().Name(), m.root.GetName(), kind, m.obj.GetName())
		}
	}
	if t.Failed() {
		if b, err := json.MarshalIndent(roots, "", "  "); err == nil {
			t.Logf("the trees:\n%s", b)
		}
	}
}

// componentOf is the component label the engine stamps on a child of root.
func componentOf(root client.Object) string {
	switch root.(type) {
	case *mooringv1.App:
		return app.Component
	case *mooringv1.CacheInstance:
		return cachecontroller.Component
	case *v1beta1.DatabaseCluster:
		return database.Component
	case *mooringv1.Backup:
		return backupcontroller.Component
	}
	panic(fmt.Sprintf("no component for %T", root))
}
