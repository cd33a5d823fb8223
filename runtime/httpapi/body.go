package httpapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/strictjson"
)

// MaxBody is the largest request body accepted (1 MiB).
const MaxBody = 1 << 20

// readBody reads a request body of at most MaxBody bytes. It refuses a body whose declared or actual
// length is larger with 413, before decoding anything.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, apierr.New(apierr.PayloadTooLarge, "The request body is larger than 1 MiB.")
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apierr.New(apierr.PayloadTooLarge, "The request body is larger than 1 MiB.")
		}
		return nil, apierr.New(apierr.InvalidRequest, "The request body could not be read.")
	}
	if len(data) > MaxBody {
		return nil, apierr.New(apierr.PayloadTooLarge, "The request body is larger than 1 MiB.")
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
				return nil, apierr.New(apierr.InvalidRequest, "Request bodies must be application/json.")
			}
		}
	}
	return data, nil
}

// DecodeObject decodes a JSON object strictly (engine/strictjson): exactly one object, numbers kept
// exact, no member named twice anywhere in it (*strictjson.DuplicateError), valid UTF-8. It is what
// every body goes through.
func DecodeObject(data []byte) (map[string]any, error) {
	v, err := strictjson.Decode(data)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the body must be a JSON object")
	}
	return obj, nil
}

// malformedBody is the 400 of a body DecodeObject refused; a member named twice is named in details.
func malformedBody(err error) *apierr.Error {
	var dup *strictjson.DuplicateError
	if errors.As(err, &dup) {
		return apierr.Invalid("Malformed body: "+err.Error()+"; send each member once.", field.ErrorList{field.New(field.CodeDuplicate, field.NewPath(dup.Path), "appears more than once")})
	}
	return apierr.New(apierr.InvalidRequest, "Malformed body: "+err.Error()+".")
}
