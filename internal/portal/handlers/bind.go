package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// readBody reads the whole body, answering 413 past the body limit.
func readBody(c *gin.Context) ([]byte, error) {
	if c.Request.Body == nil {
		return nil, nil
	}
	data, err := io.ReadAll(c.Request.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, errTooLarge
	}
	if err != nil {
		return nil, &requestError{status: http.StatusBadRequest, code: CodeBadRequest, message: "could not read the request body"}
	}
	return data, nil
}

// readJSON reads the body and checks it as every JSON body is checked (checkJSON): one
// value, no key twice, numbers that fit.
func readJSON(c *gin.Context) ([]byte, error) {
	data, err := readBody(c)
	if err != nil {
		return nil, err
	}
	if err := checkJSON(data); err != nil {
		return nil, err
	}
	return data, nil
}

// bindJSON decodes the body into dst strictly: one JSON object, no key twice, no unknown
// fields, each field of the right type; the error names the field.
func bindJSON(c *gin.Context, dst any) error {
	data, err := readJSON(c)
	if err != nil {
		return err
	}
	return decodeStrict(data, dst)
}

func decodeStrict(data []byte, dst any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return badJSON("", "a JSON object is required")
	}
	if err := exactKeys(data, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr):
			name := typeErr.Field
			if name == "" {
				return badJSON("", "the body must be a JSON object")
			}
			return badJSON(name, fmt.Sprintf("must be a %s, got a JSON %s", typeErr.Type.Kind(), typeErr.Value))
		case errors.As(err, &syntaxErr):
			return badJSON("", fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return badJSON(name, "is not a known field")
		default:
			return badJSON("", "malformed JSON: "+err.Error())
		}
	}
	if dec.More() {
		return badJSON("", "the body must hold exactly one JSON value")
	}
	return nil
}

func badJSON(name, msg string) error {
	e := &requestError{status: http.StatusBadRequest, code: CodeBadRequest, message: msg}
	if name != "" {
		e.message = name + ": " + msg
		e.fields = []models.FieldError{{Field: name, Message: msg}}
	}
	return e
}

// exactKeys refuses keys of a JSON object that match none of dst's fields exactly:
// encoding/json matches keys case-insensitively ("Username" sets username), which the
// OpenAPI document, with additionalProperties false, forbids. A body that is no
// object is left to the decoder to refuse.
func exactKeys(data []byte, dst any) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	known := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" {
			name = t.Field(i).Name
		}
		known[name] = true
	}
	var unknown []string
	for k := range obj {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return badJSON(unknown[0], "is not a known field (keys are case-sensitive)")
}
