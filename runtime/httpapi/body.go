package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// MaxBody is the largest request body accepted (1 MiB).
const MaxBody = 1 << 20

// readBody reads a request body of at most MaxBody bytes. It refuses a body whose declared or actual
// length is larger with 413, before decoding anything.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, apiError(413, "payload_too_large", "The request body is larger than 1 MiB.")
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apiError(413, "payload_too_large", "The request body is larger than 1 MiB.")
		}
		return nil, apiError(400, "invalid_request", "The request body could not be read.")
	}
	if len(data) > MaxBody {
		return nil, apiError(413, "payload_too_large", "The request body is larger than 1 MiB.")
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
				return nil, apiError(400, "invalid_request", "Request bodies must be application/json.")
			}
		}
	}
	return data, nil
}

// DecodeObject decodes a JSON object strictly: exactly one object, numbers kept exact, no duplicate
// member names, valid UTF-8. It is what every body and filter parameter goes through.
func DecodeObject(data []byte) (map[string]any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the body must hold a single JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the body must be a JSON object")
	}
	return obj, nil
}

// maxDepth bounds nesting so that a hostile body cannot exhaust the stack.
const maxDepth = 32

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("the body nests deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, malformed(err)
				}
				key := kt.(string)
				if _, dup := obj[key]; dup {
					return nil, fmt.Errorf("member %q appears more than once", key)
				}
				v, err := decodeValue(dec, depth+1)
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
				v, err := decodeValue(dec, depth+1)
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
	return tok, nil
}

func malformed(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the body is empty or ends early; send a JSON object")
	}
	return fmt.Errorf("malformed JSON: %v", err)
}
