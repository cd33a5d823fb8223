package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encoded is a document encoded once, split around the placeholder that stands for the server's base
// address, so that it can be rendered for any address without encoding it again.
type Encoded struct {
	Before, After []byte // the encoded document around the placeholder
}

// Encode encodes doc (deterministically: encoding/json sorts map keys; HTML characters are not escaped)
// and finds placeholder in it, which must occur exactly once.
func Encode(doc map[string]any, placeholder string) (Encoded, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return Encoded{}, fmt.Errorf("encode: %w", err)
	}
	data := bytes.TrimRight(buf.Bytes(), "\n")
	if n := bytes.Count(data, []byte(placeholder)); n != 1 {
		return Encoded{}, fmt.Errorf("server placeholder %q occurs %d times", placeholder, n)
	}
	i := bytes.Index(data, []byte(placeholder))
	return Encoded{Before: data[:i], After: data[i+len(placeholder):]}, nil
}

// Render returns the document with base in place of the placeholder, JSON-escaped (base may come from
// a Host header).
func (e Encoded) Render(base string) []byte {
	quoted, _ := json.Marshal(base)
	esc := quoted[1 : len(quoted)-1]
	body := make([]byte, 0, len(e.Before)+len(esc)+len(e.After))
	return append(append(append(body, e.Before...), esc...), e.After...)
}
