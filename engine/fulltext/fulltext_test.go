package fulltext

import (
	"slices"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"plist-007-ab12":        {"plist", "007", "ab12"},
		"ann@x.example":         {"ann", "x", "example"},
		"v1.2.3 foo.bar x_y":    {"v1", "2", "3", "foo", "bar", "x", "y"},
		"Crème Brûlée, SEÑOR":   {"creme", "brulee", "senor"},
		"東京都 タワー":               {"東京都", "タワー"},
		"ﬁle ² Ａbc":             {"file", "2", "abc"},
		"  --  ":                nil,
		"Łódź straße":           {"łodz", "straße"},
		"ガンダム":                  {"ガンダム"},
		"हिन्दी":                {"हिन्दी"},
		"O'Brien & co.":         {"o", "brien", "co"},
		"+1 (555) 010-9999":     {"1", "555", "010", "9999"},
		"https://a.example/p?q": {"https", "a", "example", "p", "q"},
	} {
		if got := Tokens(in); !slices.Equal(got, want) {
			t.Errorf("Tokens(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDocument(t *testing.T) {
	t.Parallel()
	if got := Document("Acme acme-7", "", "ACME 7 Ltd"); got != "acme 7 ltd" {
		t.Errorf("Document = %q", got)
	}
	long := strings.Repeat("é", 250) // 500 bytes, 250 once folded to e
	if got := Tokens(long + "x")[0]; len(got) != MaxTokenBytes {
		t.Errorf("a long word: %d bytes, want %d", len(got), MaxTokenBytes)
	}
	cjk := strings.Repeat("字", 100) // 3 bytes each: cut on a character boundary
	if got := Tokens(cjk)[0]; len(got) != 198 || !strings.HasPrefix(cjk, got) {
		t.Errorf("a long CJK word: %d bytes", len(got))
	}
}
