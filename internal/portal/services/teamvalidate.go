package services

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// Bounds of a team's spec, as the Team CRD has them.
const (
	maxTeamDescription = 1024
	maxTeamMembers     = 256
	maxTeamGroups      = 64
	maxTeamGroupLen    = 256
	maxTeamNamespaces  = 256
)

// validateTeamName refuses a name that is no DNS label or too long for the name of the
// team's RoleBindings ("mooring-portal-team-<name>").
func validateTeamName(name string) []models.FieldError {
	switch n := len(name); {
	case n == 0 || n > portalv1alpha1.MaxTeamNameLength:
		return []models.FieldError{field("name", "must be 1 to %d characters long, got %d", portalv1alpha1.MaxTeamNameLength, n)}
	case !dnsLabel.MatchString(name):
		return []models.FieldError{field("name", "must consist of lower-case letters, digits and '-', and start and end with a letter or digit")}
	}
	return nil
}

// setOf returns xs sorted without duplicates (nil when empty): the spec's lists are sets.
func setOf(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(xs)))
}

// validateTeamSpec checks spec (pure, but for the members: see validateSpec) and makes
// its lists sets. Each bad element is named by its index in the list as given.
func validateTeamSpec(spec *portalv1alpha1.TeamSpec, protected Protected) []models.FieldError {
	var bad []models.FieldError
	if utf8.RuneCountInString(spec.Description) > maxTeamDescription {
		bad = append(bad, field("description", "must be at most %d characters long", maxTeamDescription))
	}
	if spec.Role != "developer" && spec.Role != "auditor" {
		bad = append(bad, field("role", "must be developer or auditor; got %q", spec.Role))
	}
	if len(spec.Members) > maxTeamMembers {
		bad = append(bad, field("members", "must have at most %d members, got %d", maxTeamMembers, len(spec.Members)))
	}
	for i, m := range spec.Members {
		if bad1 := validateUsername(m); bad1 != nil {
			bad = append(bad, field(fmt.Sprintf("members[%d]", i), "%q is no username: %s", m, bad1[0].Message))
		}
	}
	if len(spec.Groups) > maxTeamGroups {
		bad = append(bad, field("groups", "must have at most %d groups, got %d", maxTeamGroups, len(spec.Groups)))
	}
	for i, g := range spec.Groups {
		if n := len(g); n == 0 || n > maxTeamGroupLen || strings.TrimSpace(g) != g {
			bad = append(bad, field(fmt.Sprintf("groups[%d]", i), "must be 1 to %d characters long, without leading or trailing spaces", maxTeamGroupLen))
		}
	}
	if len(spec.Namespaces) > maxTeamNamespaces {
		bad = append(bad, field("namespaces", "must have at most %d namespaces, got %d", maxTeamNamespaces, len(spec.Namespaces)))
	}
	for i, ns := range spec.Namespaces {
		if len(ns) > 63 || !dnsLabel.MatchString(ns) {
			bad = append(bad, field(fmt.Sprintf("namespaces[%d]", i), "%q is not a valid namespace name", ns))
		} else if why := protected.Why(ns); why != "" {
			bad = append(bad, field(fmt.Sprintf("namespaces[%d]", i), "namespace %q is protected (%s) and cannot be granted", ns, why))
		}
	}
	if len(bad) == 0 {
		spec.Members, spec.Groups, spec.Namespaces = setOf(spec.Members), setOf(spec.Groups), setOf(spec.Namespaces)
	}
	return bad
}

// validateSpec is validateTeamSpec, and refuses members that are no account. Usernames
// are case-insensitive, as at login.
func (s *Teams) validateSpec(ctx context.Context, spec *portalv1alpha1.TeamSpec) error {
	for i := range spec.Members {
		spec.Members[i] = normalizeUsername(spec.Members[i])
	}
	given := slices.Clone(spec.Members)
	if bad := validateTeamSpec(spec, s.protected); len(bad) > 0 {
		return invalid(bad...)
	}
	var bad []models.FieldError
	for i, m := range given {
		if _, err := s.users.Get(ctx, m); errors.Is(err, store.ErrNotFound) {
			bad = append(bad, field(fmt.Sprintf("members[%d]", i), "no user named %q", m))
		} else if err != nil {
			return fmt.Errorf("look up member %s: %w", m, err)
		}
	}
	if len(bad) > 0 {
		return invalid(bad...)
	}
	return nil
}
