package services

import (
	"fmt"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// Kind classifies a service error; handlers map it to an HTTP status.
type Kind int

// The kinds of errors services return on purpose.
const (
	KindInvalid Kind = iota + 1
	KindUnauthorized
	KindForbidden
	KindNotFound
	KindConflict
	// KindBadRequest is a request that cannot be understood, such as a list's continue
	// token that no list gave.
	KindBadRequest
)

// Error is an error a service returns on purpose, with the fields it concerns.
// Errors of the API server pass through unchanged as *apierrors.StatusError.
type Error struct {
	Kind    Kind
	Message string
	Fields  []models.FieldError
}

func (e *Error) Error() string { return e.Message }

func invalid(fields ...models.FieldError) *Error {
	msg := "invalid input"
	if len(fields) > 0 {
		msg = fmt.Sprintf("invalid input: %s: %s", fields[0].Field, fields[0].Message)
	}
	return &Error{Kind: KindInvalid, Message: msg, Fields: fields}
}

func field(name, format string, args ...any) models.FieldError {
	return models.FieldError{Field: name, Message: fmt.Sprintf(format, args...)}
}

// errBadCredentials is the one answer to every failed login, whatever the reason, so
// that nobody learns which usernames exist or which accounts are locked.
var errBadCredentials = &Error{Kind: KindUnauthorized, Message: "invalid username or password"}

// errBadToken is the one answer to every refused token.
var errBadToken = &Error{Kind: KindUnauthorized, Message: "invalid or expired token"}
