package model_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/workspace-records/records/engine/model"
)

// TestURLSchemes: a url value is an absolute http or https address with a host, in any letter case of
// the scheme; every other scheme a browser would run or open (javascript:, data:, vbscript:, file:,
// mailto: …) and anything without a host is refused by Check, and the schema's pattern (URLPattern)
// refuses the same scheme-less and foreign-scheme values.
func TestURLSchemes(t *testing.T) {
	f := &model.Field{Key: "website", Type: model.URL, MaxLength: 2048}
	pattern := regexp.MustCompile(model.URLPattern)
	for _, ok := range []string{
		"https://example.com", "http://example.com/a?b=c#d", "HTTPS://EXAMPLE.COM", "hTTp://x.example:8080/",
		"https://user@example.com/", "https://[2001:db8::1]/x", "https://127.0.0.1",
	} {
		if err := model.Check(f, ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
		if !pattern.MatchString(ok) {
			t.Errorf("%q does not match the schema pattern", ok)
		}
	}
	for _, bad := range []string{
		"javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "javascript://example.com/%0aalert(1)",
		"data:text/html,<script>alert(1)</script>", "vbscript:msgbox(1)", "file:///etc/passwd", "ftp://example.com/",
		"mailto:a@example.com", "tel:+15550100", "//example.com/x", "/relative/path", "example.com", "https:example.com",
		"https://", "http:///x", "https://@/", "https://:80/", "", "http ://example.com", "https://exa mple.com",
	} {
		if err := model.Check(f, bad); !errors.Is(err, model.ErrURL) {
			t.Errorf("%q: got %v, want ErrURL", bad, err)
		}
	}
	for _, bad := range []string{"javascript:alert(1)", "data:text/html,x", "mailto:a@example.com", "//example.com", "https://", "https://@x"} {
		if pattern.MatchString(bad) {
			t.Errorf("%q matches the schema pattern", bad)
		}
	}
	// Other textual types are not URLs.
	if err := model.Check(&model.Field{Key: "note", Type: model.String, MaxLength: 255}, "javascript:alert(1)"); err != nil {
		t.Errorf("a string field refused text: %v", err)
	}
}
