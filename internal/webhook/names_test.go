package webhook

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// Each kind refuses a new object whose name its children cannot carry, naming
// metadata.name and the reason, and lets an object stored with such a name (before the
// rule) take updates.
func TestNewNameRefused(t *testing.T) {
	ctx := context.Background()
	kinds := map[string]struct {
		max            int
		label          bool // the name must be a DNS-1035 label
		create, update func(name string) error
	}{
		"App": {
			max:    mooringv1.MaxAppNameLength,
			label:  true,
			create: func(name string) error { return validateApp(testApp(name)) },
			update: func(name string) error { return validateAppUpdate(testApp(name), testApp(name)) },
		},
		"CacheInstance": {
			max:   mooringv1.MaxCacheInstanceNameLength,
			label: true,
			create: func(name string) error {
				_, err := CacheInstanceValidator{}.ValidateCreate(ctx, testCache(name))
				return err
			},
			update: func(name string) error {
				_, err := CacheInstanceValidator{}.ValidateUpdate(ctx, testCache(name), testCache(name))
				return err
			},
		},
		"DatabaseCluster": {
			max:    v1beta1.MaxNameLength,
			label:  true,
			create: func(name string) error { return validateDatabaseCluster(testDatabase(name)) },
			update: func(name string) error {
				return invalid(testDatabase(name), validateDatabaseClusterUpdate(testDatabase(name), testDatabase(name), "v1beta1"))
			},
		},
		"Backup": {
			max: MaxBackupNameLength,
			create: func(name string) error {
				return invalidBackup(testBackup(name), validateBackupSpec(nil, testBackup(name)))
			},
			update: func(name string) error {
				return invalidBackup(testBackup(name), validateBackupSpec(testBackup(name), testBackup(name)))
			},
		},
	}
	for kind, k := range kinds {
		longest := "n" + strings.Repeat("a", k.max-1)
		names := map[string]struct {
			name string
			want []string // substrings of the create error; none for valid
		}{
			"longest":         {name: longest},
			"one too long":    {name: longest + "b", want: []string{`metadata.name: Invalid value: "` + longest + `b": must be no more than`, "characters: "}},
			"upper case":      {name: "Orders", want: []string{`metadata.name: Invalid value: "Orders": must be a DNS-1035 label`, "it names the " + kind + "'s Service"}},
			"dotted":          {name: "orders.v1", want: []string{"metadata.name", "DNS-1035"}},
			"leading digit":   {name: "1orders", want: []string{"metadata.name", "DNS-1035"}},
			"trailing hyphen": {name: "orders-", want: []string{"metadata.name", "DNS-1035"}},
		}
		for what, tc := range names {
			t.Run(kind+"/"+what, func(t *testing.T) {
				if !k.label && what != "one too long" {
					tc.want = nil // any name the API server takes within the length
				}
				err := k.create(tc.name)
				if len(tc.want) == 0 {
					if err != nil {
						t.Fatalf("create %q: %v, want it admitted", tc.name, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("create %q admitted, want a refusal saying %q", tc.name, tc.want)
				}
				for _, want := range tc.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("create %q: %q does not say %q", tc.name, err, want)
					}
				}
				if strings.Contains(err.Error(), "<nil>") {
					t.Errorf("create %q: %q names no field", tc.name, err)
				}
				if err := k.update(tc.name); err != nil {
					t.Errorf("update of a stored %q: %v, want it admitted (a name never changes)", tc.name, err)
				}
			})
		}
	}
}

func testApp(name string) *mooringv1.App {
	return &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}, Spec: mooringv1.AppSpec{Image: "nginx:1.27"}}
}

func testCache(name string) *mooringv1.CacheInstance {
	return &mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}
}

func testDatabase(name string) *v1beta1.DatabaseCluster {
	db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}
	db.Spec.Engine = v1beta1.PostgreSQL
	db.Spec.Version = SupportedVersions(v1beta1.PostgreSQL)[0]
	return db
}

func testBackup(name string) *mooringv1.Backup {
	return &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "@daily"}}
}
