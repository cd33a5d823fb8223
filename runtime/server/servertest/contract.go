package servertest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// Contract checks requests and responses against an OpenAPI document with libopenapi-validator.
type Contract struct {
	// mu serialises the validator's calls: they are not safe for concurrent use (rendering a response
	// schema writes libopenapi's cached nodes; the race detector sees it), and one Contract serves
	// every env of the same definitions, parallel tests included.
	mu sync.Mutex
	v  validator.Validator
}

var (
	contractsMu sync.Mutex
	contracts   = map[[32]byte]*Contract{}
)

// ContractFor returns the contract of an OpenAPI document, built once per distinct document.
func ContractFor(doc []byte) (*Contract, error) {
	key := sha256.Sum256(doc)
	contractsMu.Lock()
	defer contractsMu.Unlock()
	if c, ok := contracts[key]; ok {
		return c, nil
	}
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("parse OpenAPI document: %w", err)
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("OpenAPI validator: %v", errs)
	}
	c := &Contract{v: v}
	contracts[key] = c
	return c, nil
}

// ValidateDocument validates the document itself against the OpenAPI 3.1 specification.
func (c *Contract) ValidateDocument() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, errs := c.v.ValidateDocument()
	return describe(errs)
}

// CheckRequest validates a request (its body given separately) against the document.
func (c *Contract) CheckRequest(req *http.Request, body []byte) []string {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	defer c.mu.Unlock()
	_, errs := c.v.ValidateHttpRequestSync(r)
	return describe(errs)
}

// Undocumented reports whether errs say the request's path or method is not in the document.
func Undocumented(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType != "path" {
			return false
		}
	}
	return len(errs) > 0
}

// CheckResponse validates a response (its body given separately) to req against the document: its
// status must be documented for the operation, its body must match, and so must its documented headers.
// A request whose path or method the document does not have is undocumented (true, no problems).
//
// A path with a trailing slash or one that is not clean (/v1/, /v1//companies) is undocumented too: the
// validator would match it to the path without, which the server, answering exactly the paths it
// documents, does not (404).
func (c *Contract) CheckResponse(req *http.Request, res *http.Response, body []byte) (undocumented bool, problems []string) {
	if p := req.URL.Path; p != "/" && (strings.HasSuffix(p, "/") || path.Clean(p) != p) {
		return true, nil
	}
	r := *res
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	defer c.mu.Unlock()
	_, errs := c.v.ValidateHttpResponse(req, &r)
	if Undocumented(errs) {
		return true, nil
	}
	return false, describe(errs)
}

func describe(errs []*verrors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		msg := e.Message
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			msg += fmt.Sprintf(" [%s %s: %s]", f.FieldPath, f.KeywordLocation, f.Reason)
		}
		out = append(out, msg)
	}
	return out
}
