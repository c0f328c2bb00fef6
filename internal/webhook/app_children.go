package webhook

import (
	"fmt"
	"net"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The App fields that pass the schema but would make a child the API server rejects:
// the Deployment's container resources and pod security context, the Ingress's path,
// class, host and TLS Secret, the HTTPRoute's path and parent reference. Each rule is
// the one Kubernetes (k8s.io/kubernetes/pkg/apis/core and networking validation, which
// Mooring cannot import) or the Gateway API CRD applies to the child, checked here on
// the App's own field path, so that the App is refused instead of failing later with
// the child's error. The children are built in internal/controller/app, which imports
// this package (through the DatabaseCluster controller), so the rules follow its
// builders by hand: the pod security context and resources are passed through
// unchanged, the path defaults to "/".

// childErrors are the App's values its children would not take.
func childErrors(app *mooringv1.App) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateContainerResources(app.Spec.Resources, field.NewPath("spec", "resources"))...)
	errs = append(errs, validatePodSecurityContextValues(app.Spec.SecurityContext, field.NewPath("spec", "securityContext"))...)
	return append(errs, validateExpose(app.Spec.Expose, field.NewPath("spec", "expose"))...)
}

// ratchet is check's errors of app without those old already had: the same field, value
// and complaint.
func ratchet(check func(*mooringv1.App) field.ErrorList, app, old *mooringv1.App) field.ErrorList {
	errs := check(app)
	if old == nil || len(errs) == 0 {
		return errs
	}
	had := map[string]bool{}
	for _, e := range check(old) {
		had[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}

// hugePagesPrefix starts the names of huge page resources, e.g. hugepages-2Mi.
const hugePagesPrefix = "hugepages-"

// standardContainerResources are the resources a container may name without a domain.
var standardContainerResources = map[corev1.ResourceName]bool{
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), hugePagesPrefix)
}

// isNative is a resource Kubernetes defines: no domain, or one in kubernetes.io.
func isNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
}

// overcommitAllowed is false for extended resources and huge pages: their request must
// equal their limit.
func overcommitAllowed(name corev1.ResourceName) bool {
	return isNative(name) && !isHugePages(name)
}

// validateContainerResources adds what Kubernetes checks of a container's resources
// beyond validateResources: the names a container may use, whole numbers of extended
// resources, requests equal to limits where no overcommit is allowed, huge pages in
// whole pages and only beside cpu or memory, and no claims (the App's pods declare none).
func validateContainerResources(r corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	reqPath, limPath := path.Child("requests"), path.Child("limits")
	cpuOrMemory, hugePages := false, false
	check := func(list corev1.ResourceList, p *field.Path) {
		for name, q := range list {
			fp := p.Key(string(name))
			if len(validation.IsQualifiedName(string(name))) > 0 {
				continue // validateResources says so
			}
			switch {
			case !strings.Contains(string(name), "/"):
				if !standardContainerResources[name] && !isHugePages(name) {
					errs = append(errs, field.Invalid(fp, string(name),
						"must be cpu, memory, ephemeral-storage, hugepages-<size> or an extended resource with a domain, such as example.com/gpu"))
					continue
				}
			case !isNative(name):
				if strings.HasPrefix(string(name), "requests.") || len(validation.IsQualifiedName("requests."+string(name))) > 0 {
					errs = append(errs, field.Invalid(fp, string(name), "is not a valid extended resource name"))
					continue
				}
				if q.MilliValue()%1000 != 0 {
					errs = append(errs, field.Invalid(fp, q.String(), "must be a whole number: extended resources are not divisible"))
				}
			}
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				cpuOrMemory = true
			}
			if isHugePages(name) {
				hugePages = true
				if msg := hugePageValue(name, q); msg != "" {
					errs = append(errs, field.Invalid(fp, q.String(), msg))
				}
			}
		}
	}
	check(r.Requests, reqPath)
	check(r.Limits, limPath)
	for name, req := range r.Requests {
		if overcommitAllowed(name) {
			continue
		}
		limit, ok := r.Limits[name]
		switch {
		case !ok:
			errs = append(errs, field.Required(limPath.Key(string(name)),
				fmt.Sprintf("must be set to the request %s: %s cannot be overcommitted", req.String(), name)))
		case req.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(reqPath.Key(string(name)), req.String(),
				fmt.Sprintf("must be equal to the limit %s: %s cannot be overcommitted", limit.String(), name)))
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "huge pages need a cpu or memory request or limit"))
	}
	for i, c := range r.Claims {
		errs = append(errs, field.Invalid(path.Child("claims").Index(i).Child("name"), c.Name,
			"refers to no resource claim: the App's pods declare none, so spec.resources.claims must be empty"))
	}
	return errs
}

// hugePageValue is why q is not a whole number of the pages name names; "" when it is.
func hugePageValue(name corev1.ResourceName, q resource.Quantity) string {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), hugePagesPrefix))
	if err != nil || size.Sign() <= 0 {
		return fmt.Sprintf("%s does not name a page size (hugepages-2Mi, hugepages-1Gi)", name)
	}
	if q.Value()%size.Value() != 0 {
		return fmt.Sprintf("must be a whole number of %s pages", size.String())
	}
	return ""
}

// validatePodSecurityContextValues adds what Kubernetes checks of the pod security context
// beyond validatePodSecurityContext: user and group IDs in range, known enum values, and
// Localhost profiles that name their profile, as a relative path inside the node's
// profile directory.
func validatePodSecurityContextValues(sc *corev1.PodSecurityContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	ids := map[string]*int64{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup, "fsGroup": sc.FSGroup}
	for _, name := range []string{"runAsUser", "runAsGroup", "fsGroup"} {
		if id := ids[name]; id != nil {
			for _, msg := range validation.IsValidUserID(*id) {
				errs = append(errs, field.Invalid(path.Child(name), *id, msg))
			}
		}
	}
	for i, g := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(g) {
			errs = append(errs, field.Invalid(path.Child("supplementalGroups").Index(i), g, msg))
		}
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p != corev1.FSGroupChangeOnRootMismatch && *p != corev1.FSGroupChangeAlways {
		errs = append(errs, field.NotSupported(path.Child("fsGroupChangePolicy"), *p,
			[]corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways}))
	}
	if p := sc.SupplementalGroupsPolicy; p != nil && *p != corev1.SupplementalGroupsPolicyMerge && *p != corev1.SupplementalGroupsPolicyStrict {
		errs = append(errs, field.NotSupported(path.Child("supplementalGroupsPolicy"), *p,
			[]corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
	}
	if p := sc.SeccompProfile; p != nil {
		fp := path.Child("seccompProfile")
		switch p.Type {
		case corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost:
		default:
			errs = append(errs, field.NotSupported(fp.Child("type"), p.Type,
				[]corev1.SeccompProfileType{corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeLocalhost}))
		}
		errs = append(errs, localhostProfile(p.Type == corev1.SeccompProfileTypeLocalhost, p.LocalhostProfile, fp, true)...)
	}
	if p := sc.AppArmorProfile; p != nil {
		fp := path.Child("appArmorProfile")
		switch p.Type {
		case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeLocalhost:
		default:
			errs = append(errs, field.NotSupported(fp.Child("type"), p.Type,
				[]corev1.AppArmorProfileType{corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeLocalhost}))
		}
		errs = append(errs, localhostProfile(p.Type == corev1.AppArmorProfileTypeLocalhost, p.LocalhostProfile, fp, false)...)
	}
	return errs
}

// localhostProfile checks a profile's localhostProfile: required exactly when the type is
// Localhost; for seccomp, a relative path without "..".
func localhostProfile(localhost bool, profile *string, path *field.Path, isPath bool) field.ErrorList {
	fp := path.Child("localhostProfile")
	switch {
	case localhost && (profile == nil || *profile == ""):
		return field.ErrorList{field.Required(fp, "must name the profile when type is Localhost")}
	case !localhost && profile != nil:
		return field.ErrorList{field.Forbidden(fp, "may be set only when type is Localhost")}
	case !localhost || !isPath:
		return nil
	}
	var errs field.ErrorList
	if strings.HasPrefix(*profile, "/") {
		errs = append(errs, field.Invalid(fp, *profile, "must be a path relative to the kubelet's seccomp profile directory"))
	}
	for _, part := range strings.Split(*profile, "/") {
		if part == ".." {
			errs = append(errs, field.Invalid(fp, *profile, "must not contain '..'"))
			break
		}
	}
	return errs
}

// The rules the Ingress (pathType Prefix) and the Gateway API's HTTPRoute (PathPrefix)
// both apply to a path, and those only the HTTPRoute's CRD adds.
var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
	routePathCharacters  = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)
)

// validateExpose checks spec.expose as the Ingress and HTTPRoute built from it are checked.
func validateExpose(e *mooringv1.AppExpose, path *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	p := e.Path
	if p == "" {
		p = "/" // the builders' default
	}
	for _, seq := range invalidPathSequences {
		if strings.Contains(p, seq) {
			errs = append(errs, field.Invalid(path.Child("path"), e.Path, fmt.Sprintf("must not contain '%s'", seq)))
		}
	}
	for _, suffix := range invalidPathSuffixes {
		if strings.HasSuffix(p, suffix) {
			errs = append(errs, field.Invalid(path.Child("path"), e.Path, fmt.Sprintf("must not end with '%s'", suffix)))
		}
	}
	if e.Gateway != nil && (!routePathCharacters.MatchString(p) || strings.Contains(p, "#")) {
		errs = append(errs, field.Invalid(path.Child("path"), e.Path,
			"must contain only URL path characters (letters, digits, -._~!$&'()*+,;=:@/) and %-escapes for an HTTPRoute"))
	}
	if net.ParseIP(e.Host) != nil {
		errs = append(errs, field.Invalid(path.Child("host"), e.Host, "must be a DNS name, not an IP address"))
	}
	if c := e.IngressClassName; c != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*c) {
			errs = append(errs, field.Invalid(path.Child("ingressClassName"), *c, "must be the name of an IngressClass: "+msg))
		}
	}
	if t := e.TLS; t != nil && t.SecretName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(t.SecretName) {
			errs = append(errs, field.Invalid(path.Child("tls", "secretName"), t.SecretName, "must be the name of a Secret: "+msg))
		}
	}
	if g := e.Gateway; g != nil {
		gp := path.Child("gateway")
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
	}
	return errs
}
