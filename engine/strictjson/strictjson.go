// Package strictjson reads JSON that comes from a request — bodies and JSON-valued query parameters —
// strictly: exactly one value, valid UTF-8, numbers kept exact (json.Number), nesting bounded, and no
// object naming a member twice.
//
// encoding/json keeps the last of two members with the same name silently, so {"email":"a","email":"b"}
// would be read as "b" here and possibly as "a" by a proxy, a log or a validator in front of the
// service; a body with such a member is refused instead, wherever the object sits. Member names are
// compared after unescaping, so "n\u0061me" and "name" are the same member. Names that differ only in
// case ("Email", "EMAIL") are different members: they reach the caller's validation as unknown fields,
// because nothing here or after it matches names case-insensitively (values are decoded into maps,
// never into structs, whose field matching ignores case).
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// MaxDepth bounds nesting so that a hostile value cannot exhaust the stack.
const MaxDepth = 32

// DuplicateError reports an object that names a member more than once.
type DuplicateError struct {
	// Path is where the member sits, in the dotted form of engine/field paths: "name",
	// "custom_fields.x", "filters[0].field", "[1].op".
	Path string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("member %q appears more than once", e.Path)
}

// Decode decodes data as exactly one JSON value: objects become map[string]any, arrays []any, numbers
// json.Number. Its errors are phrases without a subject ("empty or ends early", "not valid UTF-8",
// a *DuplicateError), for the caller to say what was read.
func Decode(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func decodeValue(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed(err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, malformed(err)
			}
			key, ok := kt.(string)
			if !ok {
				return nil, errors.New("malformed JSON: object member names must be strings")
			}
			if _, dup := obj[key]; dup {
				return nil, &DuplicateError{Path: child(path, key)}
			}
			v, err := decodeValue(dec, child(path, key), depth+1)
			if err != nil {
				return nil, err
			}
			obj[key] = v
		}
		if _, err := dec.Token(); err != nil {
			return nil, malformed(err)
		}
		return obj, nil
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := decodeValue(dec, path+"["+strconv.Itoa(len(arr))+"]", depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, malformed(err)
		}
		return arr, nil
	}
	return nil, errors.New("malformed JSON")
}

func malformed(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("empty or ends early")
	}
	return fmt.Errorf("malformed JSON: %v", err)
}
