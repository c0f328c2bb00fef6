package webhook

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// nameRule is what a kind's name must be for every child Mooring names after it to be
// valid, with the reason the refusal gives. The API server checks only that a custom
// object's name is a DNS-1123 subdomain of at most 253 characters; a CEL rule on the CRD
// root could check more, but the API server reports a root rule's failure with no field
// ("<nil>: Invalid value: \"object\": ...") and refuses a rule's fieldPath of
// .metadata.name, so the check is the webhook's, as an error on metadata.name. Names are
// immutable: the rule applies on create only.
type nameRule struct {
	// max is the longest name, and tooLong why (the children it names, the labels it
	// is a value of).
	max     int
	tooLong string
	// label, when not empty, is why the name must also be a DNS-1035 label (it names a
	// Service).
	label string
}

// dns1035Label is a DNS-1035 label without its length limit (nameRule.max says it).
var dns1035Label = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// The name rules of the kinds whose names their children carry; the limits are the API's
// (api/v1 and api/v1beta1 names.go), proven by internal/controller/limits_test.go.
var (
	appNameRule = nameRule{
		max:     mooringv1.MaxAppNameLength,
		tooLong: "it names the App's Deployment and Service and is a label value",
		label:   "it names the App's Service",
	}
	cacheInstanceNameRule = nameRule{
		max:     mooringv1.MaxCacheInstanceNameLength,
		tooLong: "it names the CacheInstance's Deployment and Service and is a label value",
		label:   "it names the CacheInstance's Service",
	}
	databaseClusterNameRule = nameRule{
		max:     v1beta1.MaxNameLength,
		tooLong: "the StatefulSet labels its pods with controller-revision-hash <name>-<10-character hash>, at most 63 characters",
		label:   "it names the DatabaseCluster's Service",
	}
	// A Backup names no Service: any name the API server takes within the length will do.
	backupNameRule = nameRule{
		max:     MaxBackupNameLength,
		tooLong: "it names the Backup's CronJob, whose Jobs are named <name>-<up to 11 digits>, a label value of at most 63 characters",
	}
)

// errors are the reasons name breaks the rule, as errors on metadata.name. Callers check
// a new object's name only: a name never changes.
func (r nameRule) errors(name string) field.ErrorList {
	path := field.NewPath("metadata", "name")
	var errs field.ErrorList
	if len(name) > r.max {
		errs = append(errs, field.Invalid(path, name, fmt.Sprintf("must be no more than %d characters: %s", r.max, r.tooLong)))
	}
	if r.label != "" && !dns1035Label.MatchString(name) {
		errs = append(errs, field.Invalid(path, name,
			"must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): "+r.label))
	}
	return errs
}
