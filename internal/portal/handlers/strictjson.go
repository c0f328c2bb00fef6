package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxJSONDepth bounds how deeply a body may nest, as encoding/json's decoder does: the
// check below recurses once per level, and a 1 MiB body of "[" would otherwise be a
// million frames deep.
const maxJSONDepth = 10000

// checkJSON is the first reading of every JSON body the portal takes (accounts, teams,
// objects, merge patches): data must be one JSON value in which no object has a key
// twice and every number fits a float64. encoding/json keeps the last of duplicate
// keys, and the portal decodes object bodies before it sends them on, so the API
// server's own duplicate-field check never sees them: here they are refused, with 400
// naming the key by its path ("spec.env[1].name"), as is a number such as 1e400.
func checkJSON(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return badJSON("", "a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := checkValue(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return badJSON("", "the body must hold exactly one JSON value")
	}
	return nil
}

func checkValue(dec *json.Decoder, path string, depth int) error {
	if depth > maxJSONDepth {
		return badJSON("", fmt.Sprintf("the JSON is nested more than %d levels deep", maxJSONDepth))
	}
	tok, err := dec.Token()
	if err != nil {
		return malformed(err)
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return malformed(err)
				}
				key, _ := kt.(string)
				p := key
				if path != "" {
					p = path + "." + key
				}
				if seen[key] {
					return badJSON(p, "is given more than once")
				}
				seen[key] = true
				if err := checkValue(dec, p, depth+1); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := checkValue(dec, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
					return err
				}
			}
		}
		if _, err := dec.Token(); err != nil { // the closing '}' or ']'
			return malformed(err)
		}
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return badJSON(path, fmt.Sprintf("the number %s is out of range", v))
		}
	}
	return nil
}

func malformed(err error) error {
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return badJSON("", fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return badJSON("", "malformed JSON: the body ends before its value does")
	}
	return badJSON("", "malformed JSON: "+err.Error())
}
