package webhook

import (
	"strings"
	"testing"

	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

func annotated(raw string) *v1beta1.DatabaseCluster {
	db := cluster(v1beta1.PostgreSQL, "18")
	db.Annotations = map[string]string{v1alpha1.ConversionAnnotation: raw}
	return db
}

// The conversion annotation left on the v1beta1 object (conversion removes one it read in
// full) is refused naming it and what is wrong, in words; on update only when it changed.
func TestValidateConversionAnnotation(t *testing.T) {
	const name = "metadata.annotations[mooring.dev/v1beta1-fields]"
	for raw, want := range map[string]string{
		`not json`: "Invalid value: cannot be read: it is not JSON. It carries, as a JSON object, the v1beta1 spec fields",
		`{"storageSize":"100Ti","credentials":{"revision":99}}`: "Invalid value: cannot be read: credentials is status: v1alpha1 has " +
			"status.credentials, which only the status subresource writes; storageSize is status",
		`{"secretName":["a"]}`: "Invalid value: cannot be read: secretName must be a string. It carries",
		// Readable: a v1beta1 client wrote it.
		`{"secretName":"db-credentials"}`: "Forbidden: carries v1beta1 spec fields for v1alpha1 objects",
	} {
		errs := validateFields(nil, annotated(raw))
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), name+": "+want) {
			t.Errorf("create with %s: errors %v, want one for %s saying %q", raw, errs, name, want)
		}
		if len(errs) == 1 && strings.Contains(errs[0].Error(), "unmarshal") {
			t.Errorf("create with %s: Go decoder text in %q", raw, errs[0])
		}
		// Stored with it (before this check), a cluster takes its other changes.
		db := annotated(raw)
		db.Finalizers = nil
		if errs := validateDatabaseClusterUpdate(annotated(raw), db, "v1beta1"); len(errs) != 0 {
			t.Errorf("update keeping %s: %v, want none", raw, errs)
		}
		if errs := validateDatabaseClusterUpdate(cluster(v1beta1.PostgreSQL, "18"), annotated(raw), "v1alpha1"); len(errs) != 1 ||
			!strings.Contains(errs[0].Error(), name) {
			t.Errorf("update adding %s: %v, want one error naming %s", raw, errs, name)
		}
		if errs := validateDatabaseClusterUpdate(annotated(`{}`+raw), annotated(raw), "v1alpha1"); len(errs) != 1 {
			t.Errorf("update changing the annotation to %s: %v, want one error", raw, errs)
		}
	}
	if errs := validateFields(nil, cluster(v1beta1.PostgreSQL, "18")); len(errs) != 0 {
		t.Errorf("cluster without the annotation: %v", errs)
	}
}
