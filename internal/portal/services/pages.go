package services

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// errBadContinue is the one answer to a continue token that no list gave, whichever
// list it was given to: the API server words it differently per storage path ("continue
// key is not valid", "invalid continue token", or, through a raw read, no words at all).
var errBadContinue = &Error{Kind: KindBadRequest,
	Message: "continue: is not a token this list gave; pass the metadata.continue of the previous page, or list again from the start without it",
	Fields:  []models.FieldError{{Field: "continue", Message: "is not a token this list gave"}}}

// pageError is err of a list of page, with an invalid continue token said one way
// (errBadContinue). The portal checks the limit itself, so a list with a token that the
// API server calls a bad request was refused for its token. An expired token (410)
// keeps the API server's answer: the token was good, and the client lists again.
func pageError(page Page, err error) error {
	if err != nil && page.Continue != "" && apierrors.IsBadRequest(err) {
		return errBadContinue
	}
	return err
}
