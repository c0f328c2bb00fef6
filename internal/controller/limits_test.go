// Package controller_test proves the name limits of api/v1 and api/v1beta1: every child
// Mooring builds, and every object Kubernetes controllers derive from those children, is
// valid for a name at the limit, and some child is invalid one character beyond it.
package controller_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/app"
	"github.com/mooringhq/mooring/internal/controller/backup"
	"github.com/mooringhq/mooring/internal/controller/cache"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/dump"
)

// Suffixes Kubernetes controllers append to names of Mooring's children, at their longest.
const (
	// hash10 stands for a ReplicaSet's pod-template-hash and a StatefulSet's revision hash
	// (rand.SafeEncodeString of a 32-bit hash: up to 10 characters).
	hash10 = "bcdfghjklm"
	// cronMinutes stands for the CronJob controller's "<minutes since epoch>" Job suffix
	// (up to 10 digits).
	cronMinutes = "9999999999"
)

// check is one name or label value and the rule it must satisfy.
type check struct {
	what, value string
	rule        func(string) []string
}

func dns1035(s string) []string   { return validation.IsDNS1035Label(s) }
func dns1123(s string) []string   { return validation.IsDNS1123Label(s) }
func subdomain(s string) []string { return validation.IsDNS1123Subdomain(s) }
func labelValue(s string) []string {
	return validation.IsValidLabelValue(s)
}
func cronJobName(s string) []string {
	if len(s) > 52 {
		return []string{fmt.Sprintf("must be no more than 52 characters, is %d", len(s))}
	}
	return subdomain(s)
}

// checksOf lists what the API server validates in o, and in what controllers derive from it.
func checksOf(o client.Object) []check {
	kind := fmt.Sprintf("%T %s", o, o.GetName())
	var cs []check
	labels := func(where string, m map[string]string) {
		for k, v := range m {
			cs = append(cs, check{kind + " " + where + " label " + k, v, labelValue})
		}
	}
	labels("", o.GetLabels())
	switch x := o.(type) {
	case *corev1.Service:
		cs = append(cs, check{kind + " name", x.Name, dns1035})
		labels("selector", x.Spec.Selector)
	case *appsv1.Deployment:
		cs = append(cs, check{kind + " name", x.Name, subdomain},
			check{kind + " ReplicaSet name", x.Name + "-" + hash10, subdomain})
		labels("pod template", x.Spec.Template.Labels)
		labels("selector", x.Spec.Selector.MatchLabels)
	case *appsv1.StatefulSet:
		last := fmt.Sprintf("%s-%d", x.Name, ptr.Deref(x.Spec.Replicas, 1)-1)
		cs = append(cs, check{kind + " name", x.Name, subdomain},
			check{kind + " pod name (hostname)", last, dns1123},
			check{kind + " pod label statefulset.kubernetes.io/pod-name", last, labelValue},
			check{kind + " pod label controller-revision-hash", x.Name + "-" + hash10, labelValue},
			check{kind + " service name", x.Spec.ServiceName, dns1035})
		for _, t := range x.Spec.VolumeClaimTemplates {
			cs = append(cs, check{kind + " PVC name", t.Name + "-" + last, subdomain})
			labels("volume claim", t.Labels)
		}
		labels("pod template", x.Spec.Template.Labels)
		labels("selector", x.Spec.Selector.MatchLabels)
	case *batchv1.CronJob:
		cs = append(cs, check{kind + " name", x.Name, cronJobName},
			check{kind + " Job name (job-name label)", x.Name + "-" + cronMinutes, labelValue})
		labels("job template", x.Spec.JobTemplate.Labels)
		labels("pod template", x.Spec.JobTemplate.Spec.Template.Labels)
	case *batchv1.Job:
		cs = append(cs, check{kind + " name", x.Name, subdomain},
			check{kind + " name (job-name label)", x.Name, labelValue})
		labels("pod template", x.Spec.Template.Labels)
	case *policyv1.PodDisruptionBudget:
		cs = append(cs, check{kind + " name", x.Name, subdomain})
		labels("selector", x.Spec.Selector.MatchLabels)
	default:
		cs = append(cs, check{kind + " name", x.GetName(), subdomain})
	}
	return cs
}

// kinds build every child of each kind for an object called name, with every optional
// child turned on. service says the name must also be a DNS-1035 label (it names a Service).
var kinds = map[string]struct {
	limit    int
	service  bool
	children func(name string) []client.Object
}{
	"App": {mooringv1.MaxAppNameLength, true, func(name string) []client.Object {
		return app.Children(&mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Port: ptr.To[int32](80), Config: "x"}}, app.Resolved{})
	}},
	"CacheInstance": {mooringv1.MaxCacheInstanceNameLength, true, func(name string) []client.Object {
		return cache.Children(&mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: mooringv1.CacheInstanceSpec{Replicas: ptr.To[int32](3)}})
	}},
	"DatabaseCluster": {v1beta1.MaxNameLength, true, func(name string) []client.Object {
		db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, Version: "18", ReplicaCount: 5,
				SecretName: name + "-credentials", DeletionPolicy: v1beta1.DeletionSnapshot}}
		sts, err := database.StatefulSet(db)
		if err != nil {
			panic(err)
		}
		vol, claim := database.SnapshotVolume(db, nil, nil)
		return []client.Object{sts, database.HeadlessService(db), database.PrimaryService(db),
			database.CredentialsSecret(db, "x"), claim, database.FinalSnapshotJob(db, vol)}
	}},
	"Backup": {mooringv1.MaxBackupNameLength, false, func(name string) []client.Object {
		b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "db"}, Schedule: "@daily"}}
		db := dump.Database{Engine: v1beta1.PostgreSQL, Version: "18", Host: "db.ns.svc", Port: 5432, SecretName: "db-credentials"}
		return []client.Object{backup.StorageClaim(b), backup.CronJob(b, db),
			backup.ManualJob(b, db, "2026-12-03T10:00:00Z"), backup.CleanupJob(b)}
	}},
}

func failures(children []client.Object) []string {
	var out []string
	for _, c := range children {
		for _, ck := range checksOf(c) {
			if msgs := ck.rule(ck.value); len(msgs) > 0 {
				out = append(out, fmt.Sprintf("%s %q: %s", ck.what, ck.value, strings.Join(msgs, "; ")))
			}
		}
	}
	return out
}

// name makes a name of n characters that is a DNS-1035 label: the most permissive name
// every kind accepts, so that only its length can fail.
func name(n int) string { return "n" + strings.Repeat("a", n-2) + "z" }

func TestNameLimitsAreExact(t *testing.T) {
	for kind, k := range kinds {
		t.Run(kind, func(t *testing.T) {
			if f := failures(k.children(name(k.limit))); len(f) > 0 {
				t.Errorf("a %s named with %d characters (the limit) has invalid children:\n%s", kind, k.limit, strings.Join(f, "\n"))
			}
			if f := failures(k.children(name(k.limit + 1))); len(f) == 0 {
				t.Errorf("a %s named with %d characters has only valid children: the limit %d is too strict", kind, k.limit+1, k.limit)
			} else {
				t.Logf("%d characters: %s", k.limit+1, f[0])
			}
			// Names the API server accepts for any object but a Service does not.
			for _, bad := range []string{"1" + name(5), "a.b"} {
				f := failures(k.children(bad))
				if k.service && len(f) == 0 {
					t.Errorf("a %s named %q has only valid children, but its name must be a DNS-1035 label", kind, bad)
				}
				if !k.service && len(f) > 0 {
					t.Errorf("a %s named %q has invalid children:\n%s", kind, bad, strings.Join(f, "\n"))
				}
			}
		})
	}
}

// FuzzChildrenValid builds every child of every kind for names the admission rules accept
// (DNS-1035 labels within each kind's limit) and checks that the API server would accept
// them all. `make fuzz` runs it longer.
func FuzzChildrenValid(f *testing.F) {
	for _, seed := range []string{"a", "web", "orders-db", strings.Repeat("z", 80), "0-9-a"} {
		f.Add(seed)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	f.Fuzz(func(t *testing.T, raw string) {
		for kind, k := range kinds {
			// Map the input onto a DNS-1035 label of at most the kind's limit: a letter,
			// then letters, digits and '-', ending in a letter or digit.
			b := []byte{'a'}
			if raw != "" {
				b[0] += raw[0] % 26
			}
			for i := 1; i < len(raw) && len(b) < k.limit; i++ {
				b = append(b, alphabet[int(raw[i])%len(alphabet)])
			}
			for b[len(b)-1] == '-' {
				b[len(b)-1] = 'z'
			}
			if f := failures(k.children(string(b))); len(f) > 0 {
				t.Fatalf("%s %q: invalid children:\n%s", kind, b, strings.Join(f, "\n"))
			}
		}
	})
}
