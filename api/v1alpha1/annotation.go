package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// formerStatusFields are the status fields Mooring once carried in the conversion
// annotation too, before v1alpha1 had fields of its own for them.
var formerStatusFields = map[string]string{"storageSize": "status.storageSize", "credentials": "status.credentials"}

// CheckConversionAnnotation returns nil when conversion can read raw, the value of
// ConversionAnnotation, and otherwise says in words what is wrong with it: not a JSON
// object, a field of the wrong type, or a field the annotation does not carry (status
// above all).
func CheckConversionAnnotation(raw string) error {
	_, err := readAnnotation(raw)
	return err
}

// readAnnotation reads the conversion annotation strictly: a JSON object of nothing but
// storage, secretName, deletionPolicy, resources, tls and superuserAccess, names matched exactly (as the API server matches
// field names), each of its type; null is an absent field. Their values are checked by the
// validating webhook on the v1beta1 object, as any v1beta1 request's. With the error it
// returns the fields it could read nonetheless: an object stored as v1alpha1 by an older
// Mooring, whose annotation carried status too, keeps its spec.
func readAnnotation(raw string) (beta1Only, error) {
	var extra beta1Only
	fields, err := object([]byte(raw), "it")
	switch {
	case err != nil:
		return extra, err
	case fields == nil:
		return extra, errors.New("it is not a JSON object")
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		value := fields[name]
		switch name {
		case "secretName":
			if !decode(value, &extra.SecretName) {
				problems = append(problems, "secretName must be a string")
			}
		case "deletionPolicy":
			if !decode(value, &extra.DeletionPolicy) {
				problems = append(problems, "deletionPolicy must be a string")
			}
		case "resources":
			if !decode(value, &extra.Resources) {
				problems = append(problems, "resources must be an object of requests and limits")
			}
		case "storage":
			storage, more := readStorage(value)
			extra.Storage = storage
			problems = append(problems, more...)
		case "tls":
			if !decode(value, &extra.TLS) {
				problems = append(problems, "tls must be an object with serverCertSecretName")
			}
		case "superuserAccess":
			if !decode(value, &extra.SuperuserAccess) {
				problems = append(problems, "superuserAccess must be true or false")
			}
		default:
			if status, ok := formerStatusFields[name]; ok {
				problems = append(problems, fmt.Sprintf(
					"%s is status: v1alpha1 has %s, which only the status subresource writes", name, status))
			} else {
				problems = append(problems, fmt.Sprintf("%q is not a field it carries", name))
			}
		}
	}
	if len(problems) > 0 {
		return extra, errors.New(strings.Join(problems, "; "))
	}
	return extra, nil
}

// readStorage reads the annotation's storage: an object of size and storageClassName.
func readStorage(value json.RawMessage) (*v1beta1.StorageSpec, []string) {
	fields, err := object(value, "storage")
	if err != nil {
		return nil, []string{err.Error()}
	}
	if fields == nil {
		return nil, nil // null
	}
	storage := &v1beta1.StorageSpec{}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		value := fields[name]
		switch name {
		case "size":
			if !decode(value, &storage.Size) {
				problems = append(problems, `storage.size must be a quantity, such as "10Gi"`)
			}
		case "storageClassName":
			if !decode(value, &storage.StorageClassName) {
				problems = append(problems, "storage.storageClassName must be a string")
			}
		default:
			problems = append(problems, fmt.Sprintf("%q is not a field of storage", "storage."+name))
		}
	}
	return storage, problems
}

// decode reads value into *into, which it leaves as it was when value is not of its type.
func decode[T any](value json.RawMessage, into *T) bool {
	var v T
	if json.Unmarshal(value, &v) != nil {
		return false
	}
	*into = v
	return true
}

// object reads a JSON object's fields, nil for null; what names the value in the error.
func object(data []byte, what string) (map[string]json.RawMessage, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("%s is not JSON", what)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	return fields, nil
}
