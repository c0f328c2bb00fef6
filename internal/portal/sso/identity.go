package sso

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Identity is who signed in, as the provider's verified ID token says.
type Identity struct {
	// Issuer and Subject name the person at the provider for good: the account key.
	Issuer, Subject string
	// Username is a valid portal username made from the username claim (or the e-mail
	// local part, or the subject); the users service makes it unique.
	Username string
	// Email is the email claim, when the provider gave one.
	Email string
	// Groups are the groups claim's values, sorted, without repeats.
	Groups []string
}

// Limits of the User fields the groups claim is stored in (api/portal/v1alpha1).
const (
	maxGroups      = 256
	maxGroupLength = 256
)

// identityOf reads an Identity from a verified ID token's claims.
func identityOf(issuer, subject string, claims map[string]any, usernameClaim, groupsClaim string) (Identity, error) {
	if subject == "" || len(subject) > 255 {
		return Identity{}, fmt.Errorf("the ID token's sub must be 1 to 255 characters, got %d", len(subject))
	}
	id := Identity{Issuer: issuer, Subject: subject}
	if v, ok := claims["email"].(string); ok {
		id.Email = v
	}
	candidates := []string{}
	if v, ok := claims[usernameClaim].(string); ok {
		candidates = append(candidates, v)
	}
	if local, _, ok := strings.Cut(id.Email, "@"); ok {
		candidates = append(candidates, local)
	}
	candidates = append(candidates, subject)
	for _, c := range candidates {
		if id.Username = Username(c); id.Username != "" {
			break
		}
	}
	if id.Username == "" {
		id.Username = "user"
	}
	groups, err := groupsOf(claims[groupsClaim])
	if err != nil {
		return Identity{}, fmt.Errorf("claim %q: %w", groupsClaim, err)
	}
	id.Groups = groups
	return id, nil
}

// groupsOf reads a groups claim: a list of strings, or one string; absent is none.
func groupsOf(v any) ([]string, error) {
	var out []string
	switch g := v.(type) {
	case nil:
		return nil, nil
	case string:
		out = []string{g}
	case []any:
		for _, x := range g {
			s, ok := x.(string)
			if !ok {
				return nil, errors.New("must be a list of strings")
			}
			out = append(out, s)
		}
	default:
		return nil, errors.New("must be a list of strings")
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxGroups {
		return nil, fmt.Errorf("lists %d groups, more than the %d a portal account holds", len(out), maxGroups)
	}
	for _, s := range out {
		if len(s) > maxGroupLength {
			return nil, fmt.Errorf("a group name is longer than %d bytes", maxGroupLength)
		}
	}
	return out, nil
}

// MaxUsernameLength leaves room for a "-<n>" suffix that makes a username unique
// within the 63 characters a portal username may have.
const MaxUsernameLength = 56

// Username turns a claim into a portal username (lower-case letters, digits and '-',
// starting and ending with a letter or digit, 3 to 56 characters): other characters
// become '-', runs of '-' one, and a name too short is padded with "-sso". It returns
// "" when nothing usable is left.
func Username(claim string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(claim) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > MaxUsernameLength {
		s = strings.TrimRight(s[:MaxUsernameLength], "-")
	}
	if s == "" {
		return ""
	}
	if len(s) < 3 {
		s += "-sso"
	}
	return s
}
