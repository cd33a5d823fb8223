// Package fulltext is the one tokenisation rule of full-text search, applied in Go to both the text a
// record stores for search and the words of a search, so that SQLite and PostgreSQL index and match the
// same tokens: neither database tokenises on its own (its parser would: PostgreSQL keeps "-007",
// "ann@x.example" and "v1.2.3" whole, SQLite splits them).
//
// The rule: lower-case the text, decompose it by compatibility (NFKD: "ﬁ" is "fi", "²" is "2", full-width
// "Ａ" is "a"), drop the Latin, Greek and Cyrillic combining diacritics (U+0300–U+036F: "é" is "e", "ñ" is
// "n"), recompose (NFC), and cut it into maximal runs of letters, digits and the remaining marks; every
// other character separates. So "plist-007-ab12" is plist, 007, ab12; "ann@x.example" is ann, x,
// example; "v1.2.3" is v1, 2, 3; "Crème Brûlée" is creme, brulee; a run of Chinese or Japanese characters
// without spaces is one token ("東京都"). A search matches a record when each of its tokens is a prefix of
// one of the record's tokens.
package fulltext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxTokenBytes bounds one token: a longer run is cut to its first MaxTokenBytes bytes (on a character
// boundary), in records and searches alike, so a long search word still finds what starts with it.
const MaxTokenBytes = 200

// Tokens returns the tokens of s in order, repeats included.
func Tokens(s string) []string {
	s = norm.NFC.String(stripDiacritics(norm.NFKD.String(strings.ToLower(s))))
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) }) {
		// A word may not start with a mark a diacritic left behind (a lone combining mark is no word).
		w = strings.TrimLeftFunc(w, unicode.IsMark)
		if w == "" {
			continue
		}
		out = append(out, truncate(w))
	}
	return out
}

// Document returns the searchable text of values: their distinct tokens in order of first appearance,
// separated by single spaces ("" when there is none).
func Document(values ...string) string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, v := range values {
		for _, t := range Tokens(v) {
			if seen[t] {
				continue
			}
			seen[t] = true
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t)
		}
	}
	return b.String()
}

func stripDiacritics(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 0x0300 && r <= 0x036f {
			return -1
		}
		return r
	}, s)
}

func truncate(w string) string {
	if len(w) <= MaxTokenBytes {
		return w
	}
	cut := MaxTokenBytes
	for cut > 0 && !utf8.RuneStart(w[cut]) {
		cut--
	}
	return w[:cut]
}
