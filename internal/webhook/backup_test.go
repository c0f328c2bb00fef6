package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

func TestValidateBackup(t *testing.T) {
	tests := map[string]struct {
		name, schedule string
		wantErr        string // a substring of the error; "" for valid
	}{
		"five fields":                   {name: "nightly", schedule: "0 3 * * *"},
		"steps and ranges":              {name: "nightly", schedule: "*/15 8-18 * * 1-5"},
		"descriptor":                    {name: "nightly", schedule: "@daily"},
		"every minute":                  {name: "nightly", schedule: "* * * * *"},
		"every minute, spelled out":     {name: "nightly", schedule: "@every 1m"},
		"every ninety seconds":          {name: "nightly", schedule: "@every 1m30s"},
		"29 February: leap years":       {name: "nightly", schedule: "0 0 29 2 *"},
		"31st: the months that have it": {name: "nightly", schedule: "0 0 31 * *"},
		"30 February, or Mondays":       {name: "nightly", schedule: "0 0 30 2 1"},
		"yearly":                        {name: "nightly", schedule: "@yearly"},
		"30 February":                   {name: "nightly", schedule: "0 0 30 2 *", wantErr: "never runs"},
		"31 April":                      {name: "nightly", schedule: "0 0 31 4 *", wantErr: "never runs"},
		"31 June, September, November":  {name: "nightly", schedule: "15 4 31 6,9,11 *", wantErr: "never runs"},
		"31 February and April":         {name: "nightly", schedule: "0 0 31 2,4 *", wantErr: "never runs"},
		"every 0s":                      {name: "nightly", schedule: "@every 0s", wantErr: "runs every 1s, more often than backups can finish"},
		"every 1s":                      {name: "nightly", schedule: "@every 1s", wantErr: "at least 1 minute apart"},
		"every 59s":                     {name: "nightly", schedule: "@every 59s", wantErr: "spec.schedule"},
		"every negative":                {name: "nightly", schedule: "@every -5m", wantErr: "spec.schedule"},
		"every 500ms":                   {name: "nightly", schedule: "@every 500ms", wantErr: "spec.schedule"},
		"words":                         {name: "nightly", schedule: "every day", wantErr: "spec.schedule"},
		"minute out of range":           {name: "nightly", schedule: "61 * * * *", wantErr: "spec.schedule"},
		"six fields (seconds)":          {name: "nightly", schedule: "0 0 3 * * *", wantErr: "spec.schedule"},
		"time zone prefix":              {name: "nightly", schedule: "CRON_TZ=UTC 0 3 * * *", wantErr: "time zone"},
		"name too long for the CronJob": {name: strings.Repeat("n", MaxBackupNameLength+1), schedule: "@daily", wantErr: "metadata.name"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: tt.name}, Spec: mooringv1.BackupSpec{
				DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: tt.schedule}}
			_, err := BackupValidator{Reviewer: allowAll}.ValidateCreate(asUser("alice"), b)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}

// A Backup's references must be able to resolve, and its claim must not be a database's
// own data volume: by its name (data-<database>-<ordinal> of the database it dumps, or of
// a DatabaseCluster that exists) or by Mooring's labels on it.
func TestValidateBackupReferences(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, mooringv1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	dbLabels := map[string]string{
		"app.kubernetes.io/component": "database", "app.kubernetes.io/instance": "ledger",
		"app.kubernetes.io/name": "ledger", "app.kubernetes.io/managed-by": "mooring",
	}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: "shop"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "ledger-disk", Namespace: "shop", Labels: dbLabels}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "team-dumps", Namespace: "shop",
			Labels: map[string]string{"app.kubernetes.io/component": "database"}}},
	).Build()
	tests := map[string]struct {
		db, claim string
		want      []string // nil to allow
	}{
		"a claim of the user's":              {db: "orders", claim: "team-dumps"},
		"no claim":                           {db: "orders"},
		"data volume of a missing database":  {db: "orders", claim: "data-archive-0"},
		"data-like, not an ordinal":          {db: "orders", claim: "data-orders-x"},
		"data-like, a leading zero":          {db: "orders", claim: "data-orders-01"},
		"dotted claim":                       {db: "orders", claim: "dumps.v1"},
		"its own database's volume":          {db: "orders", claim: "data-orders-0", want: []string{"spec.storage.existingClaim", "data volume of DatabaseCluster orders"}},
		"its own database's replica volume":  {db: "orders", claim: "data-orders-12", want: []string{"spec.storage.existingClaim", "must not write its dumps into a database's own volume"}},
		"another database's volume, by name": {db: "orders", claim: "data-payments-1", want: []string{"spec.storage.existingClaim", "DatabaseCluster payments"}},
		"a database volume, by its labels":   {db: "orders", claim: "ledger-disk", want: []string{"spec.storage.existingClaim", "DatabaseCluster ledger"}},
		"claim with a slash":                 {db: "orders", claim: "shop/dumps", want: []string{"spec.storage.existingClaim", "can never name a PersistentVolumeClaim"}},
		"claim in capitals":                  {db: "orders", claim: "Dumps", want: []string{"spec.storage.existingClaim", "DNS-1123"}},
		"database with a slash":              {db: "shop/orders", want: []string{"spec.databaseRef.name", "must not contain '/'"}},
		"database with a dot":                {db: "orders.v1", want: []string{"spec.databaseRef.name", "DNS-1035"}},
		"database starting with a digit":     {db: "1orders", want: []string{"spec.databaseRef.name", "can never name a DatabaseCluster"}},
		"database name too long":             {db: strings.Repeat("d", v1beta1.MaxNameLength+1), want: []string{"spec.databaseRef.name", "53 characters"}},
		"database name longest":              {db: strings.Repeat("d", v1beta1.MaxNameLength)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"}, Spec: mooringv1.BackupSpec{
				DatabaseRef: mooringv1.DatabaseReference{Name: tt.db}, Schedule: "@daily",
				Storage: mooringv1.BackupStorage{ExistingClaim: tt.claim}}}
			_, err := BackupValidator{Reader: reader, Reviewer: allowAll}.ValidateCreate(asUser("alice"), b)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil || !apierrors.IsInvalid(err) {
				t.Fatalf("error %v, want Invalid naming %v", err, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A Backup admitted before a check existed (its schedule never runs, or it claims its
// database's volume) can still be updated: suspended, annotated, its finalizer removed.
// A changed schedule or claim is checked.
func TestValidateBackupUpdateKeepsWhatItHad(t *testing.T) {
	old := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"}, Spec: mooringv1.BackupSpec{
		DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "0 0 30 2 *",
		Storage: mooringv1.BackupStorage{ExistingClaim: "data-orders-0"}}}
	suspended := old.DeepCopy()
	suspended.Spec.Suspend = true
	if _, err := (BackupValidator{Reviewer: allowAll}).ValidateUpdate(asUser("alice"), old, suspended); err != nil {
		t.Fatalf("suspending a Backup admitted before the checks: %v", err)
	}
	changed := old.DeepCopy()
	changed.Spec.Schedule = "@every 1s"
	if _, err := (BackupValidator{Reviewer: allowAll}).ValidateUpdate(asUser("alice"), old, changed); err == nil || !strings.Contains(err.Error(), "spec.schedule") {
		t.Fatalf("a changed schedule that runs every second: %v", err)
	}
	changed = old.DeepCopy()
	changed.Spec.Storage.ExistingClaim = "data-orders-1"
	if _, err := (BackupValidator{Reviewer: allowAll}).ValidateUpdate(asUser("alice"), old, changed); err == nil || !strings.Contains(err.Error(), "spec.storage.existingClaim") {
		t.Fatalf("a changed claim that is the database's volume: %v", err)
	}
}

func TestDataVolumeOf(t *testing.T) {
	for claim, want := range map[string]string{"data-orders-0": "orders", "data-my-db-3": "my-db", "data-orders": "", "orders-0": "", "data--0": ""} {
		got, ok := dataVolumeOf(claim)
		if got != want || ok != (want != "") {
			t.Errorf("DataVolumeOf(%q) = %q %v, want %q", claim, got, ok, want)
		}
	}
}
