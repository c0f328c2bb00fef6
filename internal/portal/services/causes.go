package services

import (
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// nilField is how the API server names the field of an error raised without a path:
// a validation rule (x-kubernetes-validations) on a whole object or struct.
const nilField = "<nil>"

// leadingPath finds the field a rule's message starts with ("Invalid value:
// metadata.name must be ..."): such rules name the field they check first.
var leadingPath = regexp.MustCompile(`^(?:[A-Z][a-z]+ value: )?(?:null: )?((?:metadata|spec|status)(?:\.[A-Za-z0-9]+|\[[0-9]+\])*)\b`)

// FieldErrors turns the causes of an API server error into the request's field errors.
// A cause without a field (the API server writes "<nil>") gets the field its message
// names first; one that names none is left out (its words are in the status message
// already: the API server builds that from every cause), so no field error reaches a
// client with an empty field or "<nil>".
func FieldErrors(st metav1.Status) []models.FieldError {
	if st.Details == nil {
		return nil
	}
	var out []models.FieldError
	for _, c := range st.Details.Causes {
		f := c.Field
		if f == nilField || f == "" {
			f = ""
			if m := leadingPath.FindStringSubmatch(c.Message); m != nil {
				f = m[1]
			}
		}
		if f == "" {
			continue
		}
		out = append(out, models.FieldError{Field: f, Message: c.Message})
	}
	return out
}

// StatusMessage is the API server's message without the "<nil>: " of causes raised
// without a field.
func StatusMessage(st metav1.Status) string {
	return strings.ReplaceAll(st.Message, nilField+": ", "")
}
