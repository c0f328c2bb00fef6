package services

import (
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/models"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Password length bounds, in characters.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 128
)

func validateUsername(name string) []models.FieldError {
	n := len(name)
	switch {
	case n < 3 || n > 63:
		return []models.FieldError{field("username", "must be 3 to 63 characters long, got %d", n)}
	case !dnsLabel.MatchString(name):
		return []models.FieldError{field("username", "must consist of letters, digits and '-', and start and end with a letter or digit")}
	}
	return nil
}

func validateEmail(email string) []models.FieldError {
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 {
		return []models.FieldError{field("email", "must be a plain e-mail address such as dev@example.com")}
	}
	return nil
}

func validatePassword(name, pw string) []models.FieldError {
	// Counted in the form that is hashed: "é" is one character however it was typed.
	n := utf8.RuneCountInString(auth.NormalizePassword(pw))
	if n < MinPasswordLen || n > MaxPasswordLen {
		return []models.FieldError{field(name, "must be %d to %d characters long, got %d", MinPasswordLen, MaxPasswordLen, n)}
	}
	return nil
}

// normalizeUsername makes usernames case-insensitive: they are stored lower-case.
func normalizeUsername(name string) string { return strings.ToLower(strings.TrimSpace(name)) }
