package services

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The portal answers a read with the API server's JSON minus managedFields. Decoding
// that JSON into maps and encoding the maps again was most of the portal's CPU per
// read in hack/portalbench (and the garbage it made most of the rest), so the bytes
// are passed on as they came, with the managedFields members cut out: a scan of the
// bytes that allocates nothing. The API server encodes objects the way
// the portal did (keys sorted, HTML characters escaped), so the answer is the same.

// errNotLean says that the scan met something it does not cut (an item without
// apiVersion and kind, items that are no array): the caller decodes the slow way.
var errNotLean = errors.New("not a plain list of objects")

// leanObject returns the JSON object raw without its metadata.managedFields, cut out
// of raw itself (which is the answer's afterwards).
func leanObject(raw []byte) ([]byte, error) {
	s := &scanner{b: raw}
	s.ws()
	if err := s.object(false); err != nil {
		return nil, err
	}
	return s.result()
}

// leanList returns the JSON list raw without the metadata.managedFields of its items,
// cut out of raw itself (which is the answer's afterwards; unchanged on an error).
// errNotLean when an item has neither apiVersion nor kind (the dynamic client gives it
// the list's) or the items are no array (an answer has an empty array, never null).
func leanList(raw []byte) ([]byte, error) {
	s := &scanner{b: raw}
	s.ws()
	if s.peek() != '{' {
		return nil, s.errorf("a list must be an object")
	}
	err := s.members(func(key []byte, _, _ int) error {
		if !keyIs(key, "items") {
			return s.value()
		}
		if s.peek() != '[' {
			return errNotLean
		}
		return s.elements(func() error { return s.object(true) })
	})
	if err != nil {
		return nil, err
	}
	return s.result()
}

// scanner walks JSON text, noting the byte ranges of managedFields members to cut.
type scanner struct {
	b    []byte
	i    int
	cuts [][2]int
}

// result is the text without the cut ranges; an error if anything follows the value.
func (s *scanner) result() ([]byte, error) {
	s.ws()
	if s.i != len(s.b) {
		return nil, s.errorf("text after the value")
	}
	if len(s.cuts) == 0 {
		return bytes.TrimRight(s.b, " \t\r\n"), nil
	}
	// In place: the cuts only take bytes out, so what is kept moves towards the start.
	w, from := 0, 0
	for _, c := range s.cuts {
		w += copy(s.b[w:], s.b[from:c[0]])
		from = c[1]
	}
	w += copy(s.b[w:], s.b[from:])
	return bytes.TrimRight(s.b[:w], " \t\r\n"), nil
}

// object scans an object (an item when item is set, which must say its apiVersion or
// kind), cutting its metadata's managedFields.
func (s *scanner) object(item bool) error {
	if s.peek() != '{' {
		if item {
			return s.errorf("an item must be an object")
		}
		return s.errorf("an object is needed")
	}
	typed := false
	err := s.members(func(key []byte, _, _ int) error {
		switch {
		case keyIs(key, "metadata"):
			return s.metadata()
		case keyIs(key, "apiVersion"), keyIs(key, "kind"):
			typed = true
		}
		return s.value()
	})
	if err == nil && item && !typed {
		return errNotLean
	}
	return err
}

// metadata scans an object's metadata and cuts its managedFields member, with the
// comma that joins it to its neighbours.
func (s *scanner) metadata() error {
	if s.peek() != '{' {
		return s.value()
	}
	return s.members(func(key []byte, keyStart, comma int) error {
		if !keyIs(key, "managedFields") {
			return s.value()
		}
		start := comma // ,"managedFields":[...]
		if comma < 0 {
			start = keyStart
		}
		if err := s.value(); err != nil {
			return err
		}
		end := s.i
		if comma < 0 { // the first member: "managedFields":[...], goes with the comma after it
			j := end
			for j < len(s.b) && isSpace(s.b[j]) {
				j++
			}
			if j < len(s.b) && s.b[j] == ',' {
				end = j + 1
			}
		}
		s.cuts = append(s.cuts, [2]int{start, end})
		return nil
	})
}

// members scans the object at s.i, calling member for each with its key (quoted, as
// written), where the key starts and where the comma before it is (-1 for the first);
// member scans the value.
func (s *scanner) members(member func(key []byte, keyStart, comma int) error) error {
	s.i++ // {
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	comma := -1
	for {
		s.ws()
		keyStart := s.i
		if err := s.str(); err != nil {
			return err
		}
		key := s.b[keyStart:s.i]
		s.ws()
		if s.peek() != ':' {
			return s.errorf("a colon is needed after a key")
		}
		s.i++
		s.ws()
		if err := member(key, keyStart, comma); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			comma = s.i
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("a comma or } is needed after a member")
		}
	}
}

// elements scans the array at s.i, calling element for each element.
func (s *scanner) elements(element func() error) error {
	s.i++ // [
	s.ws()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if err := element(); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("a comma or ] is needed after an element")
		}
	}
}

// value scans any value.
func (s *scanner) value() error {
	switch c := s.peek(); {
	case c == '{':
		return s.members(func([]byte, int, int) error { return s.value() })
	case c == '[':
		return s.elements(s.value)
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
		start := s.i
		for s.i < len(s.b) && (isWordByte(s.b[s.i])) {
			s.i++
		}
		if !json.Valid(s.b[start:s.i]) {
			return s.errorf("not a number or literal: %q", s.b[start:s.i])
		}
		return nil
	default:
		return s.errorf("a value is needed")
	}
}

// str scans a string.
func (s *scanner) str() error {
	if s.peek() != '"' {
		return s.errorf("a string is needed")
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return nil
		}
	}
	return s.errorf("unterminated string")
}

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

// peek is the byte at s.i, or 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("decode JSON at byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isWordByte is a byte of a number or of true, false, null.
func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// keyIs reports whether the quoted key is name. A key with escapes is unquoted first,
// so "managed\u0046ields" is managedFields too.
func keyIs(quoted []byte, name string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return len(quoted) == len(name)+2 && string(quoted[1:len(quoted)-1]) == name
	}
	var k string
	return json.Unmarshal(quoted, &k) == nil && k == name
}
