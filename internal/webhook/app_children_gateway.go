package webhook

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The HTTPRoute of an App that names a Gateway is checked with a dry run like its other
// children, where the cluster serves the Gateway API. Where it does not (yet), the
// controller makes no HTTPRoute and nothing can be dry-run, but the App would fail the
// day the Gateway API is installed: so its route fields are checked here by the rules of
// the Gateway API's standard-channel CRD (sigs.k8s.io/gateway-api, the version go.mod
// pins), on the App's own field paths.
var (
	// routePathSequences and routePathSuffixes are what an HTTPRoute's PathPrefix value
	// may not contain, or end with.
	routePathSequences  = []string{"//", "/./", "/../", "%2f", "%2F"}
	routePathSuffixes   = []string{"/..", "/."}
	routePathCharacters = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)
)

// gatewayErrors checks spec.expose as the HTTPRoute built from it would be checked; nil
// when the App names no Gateway.
func gatewayErrors(e *mooringv1.AppExpose) field.ErrorList {
	if e == nil || e.Gateway == nil {
		return nil
	}
	path := field.NewPath("spec", "expose")
	var errs field.ErrorList
	p := e.Path
	if p == "" {
		p = "/" // the builders' default
	}
	for _, seq := range routePathSequences {
		if strings.Contains(p, seq) {
			errs = append(errs, field.Invalid(path.Child("path"), e.Path, fmt.Sprintf("must not contain '%s'", seq)))
		}
	}
	for _, suffix := range routePathSuffixes {
		if strings.HasSuffix(p, suffix) {
			errs = append(errs, field.Invalid(path.Child("path"), e.Path, fmt.Sprintf("must not end with '%s'", suffix)))
		}
	}
	if !routePathCharacters.MatchString(p) || strings.Contains(p, "#") {
		errs = append(errs, field.Invalid(path.Child("path"), e.Path,
			"must contain only URL path characters (letters, digits, -._~!$&'()*+,;=:@/) and %-escapes for an HTTPRoute"))
	}
	g, gp := e.Gateway, path.Child("gateway")
	if len(g.Name) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(gp.Child("name"), g.Name, validation.DNS1123SubdomainMaxLength))
	}
	if g.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(g.Namespace) {
			errs = append(errs, field.Invalid(gp.Child("namespace"), g.Namespace, "must be a namespace name: "+msg))
		}
	}
	if g.SectionName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(g.SectionName) {
			errs = append(errs, field.Invalid(gp.Child("sectionName"), g.SectionName, "must be the name of a Gateway listener: "+msg))
		}
	}
	return errs
}
