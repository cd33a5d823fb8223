package spec

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/workspace-records/records/engine/field"
)

// Index locates the values of one definitions file: for every path inside it, rendered as field.Path
// renders it (`fields.amount.type`, `search[1]`), the YAML nodes of its key and its value. Load keeps
// one per file read (Set.Files), so that the problems found later (model.Compile's cross-references and
// formulas) can say where they are.
type Index struct {
	File  string
	lines []string           // the file's text, one entry a line, for places inside a value's text
	at    map[string]indexed // by path; "" is the document's root
	// refused are the paths of the entries (a field, an association, a top-level key) whose values the
	// meta-schema refused: their later problems would only repeat it, so Set.Locate drops them.
	refused []string
}

type indexed struct {
	key, value *yaml.Node // key is nil for the root and for sequence items
}

// newIndex indexes the document whose root node is root, read from data.
func newIndex(file string, data []byte, root *yaml.Node) *Index {
	x := &Index{File: file, lines: strings.Split(string(data), "\n"), at: map[string]indexed{}}
	var walk func(path string, key, n *yaml.Node)
	walk = func(path string, key, n *yaml.Node) {
		x.at[path] = indexed{key: key, value: n}
		switch n.Kind {
		case yaml.MappingNode:
			for _, kv := range mapping(n) {
				walk(childPath(path, kv[0].Value), kv[0], kv[1])
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(path+"["+strconv.Itoa(i)+"]", nil, c)
			}
		}
	}
	walk("", nil, root)
	return x
}

func childPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// parentPath is the path of the value enclosing the one at path ("" for a top-level key).
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// Place sets e's Line and Column (when not set yet) to where the value at e.Field begins: a scalar's
// first character (or, with e.Within, the character inside its text), a mapping's or sequence's key.
// A path with no node of its own (a key that is missing) takes the nearest enclosing value's place.
func (x *Index) Place(e *field.Error) {
	if e.Line > 0 {
		return
	}
	path := e.Field
	for {
		if at, ok := x.at[path]; ok {
			n := at.value
			switch {
			case path == e.Field && n.Kind == yaml.ScalarNode && e.Within.Line > 0:
				e.Line, e.Column = x.inside(n, e.Within)
			case n.Kind == yaml.ScalarNode || n.Kind == yaml.AliasNode || at.key == nil:
				e.Line, e.Column = n.Line, n.Column
			default:
				e.Line, e.Column = at.key.Line, at.key.Column
			}
			return
		}
		if path == "" {
			return
		}
		path = parentPath(path)
	}
}

// refuses reports whether path is an entry the meta-schema refused, or inside one.
func (x *Index) refuses(path string) bool {
	for _, r := range x.refused {
		if path == r || strings.HasPrefix(path, r+".") || strings.HasPrefix(path, r+"[") {
			return true
		}
	}
	return false
}

// refuse notes that the meta-schema refused the value at path (index form): the entry holding it (its
// first two segments, `fields.amount` of `fields.amount.type`) is not checked again. A problem of the
// document's root (a missing top-level key) refuses nothing.
func (x *Index) refuse(path string) {
	if path == "" {
		return
	}
	entry := path
	if i := strings.IndexByte(path, '.'); i >= 0 {
		if j := strings.IndexByte(path[i+1:], '.'); j >= 0 {
			entry = path[:i+1+j]
		}
	}
	x.refused = append(x.refused, entry)
}

// inside returns the file position of the character at off (1-based line and column of the value's
// text) in the scalar n. The value's text is matched against the file's text from where the scalar
// begins, the way each style writes it: plain and block scalars (their line breaks and indentation),
// single-quoted (” for ') and double-quoted (backslash escapes). Where the text cannot be followed
// (an escape it does not know), the scalar's own place stands in.
func (x *Index) inside(n *yaml.Node, off field.Offset) (line, col int) {
	line, col = n.Line, n.Column
	target, ok := runeOffset(n.Value, off)
	if !ok {
		return line, col
	}
	// The source cursor: a 0-based line index and a 0-based rune index in that line.
	sl, sc := n.Line-1, n.Column-1
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		sl, sc = n.Line, 0 // the text starts on the line after the indicator
	case n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0:
		sc++ // past the opening quote
	}
	src := func(l int) []rune {
		if l < 0 || l >= len(x.lines) {
			return nil
		}
		return []rune(strings.TrimSuffix(x.lines[l], "\r"))
	}
	cur := src(sl)
	// skipSpace moves the cursor past white space and line breaks (block indentation, folded lines).
	skipSpace := func() bool {
		for {
			for sc < len(cur) && (cur[sc] == ' ' || cur[sc] == '\t') {
				sc++
			}
			if sc < len(cur) {
				return true
			}
			if sl+1 >= len(x.lines) {
				return false
			}
			sl, sc, cur = sl+1, 0, src(sl+1)
		}
	}
	if !skipSpace() {
		return line, col
	}
	double := n.Style&yaml.DoubleQuotedStyle != 0
	single := n.Style&yaml.SingleQuotedStyle != 0
	value := []rune(n.Value)
	for i := 0; i < len(value); i++ {
		if i == target {
			return sl + 1, sc + 1
		}
		v := value[i]
		if v == ' ' || v == '\t' || v == '\n' {
			// A run of white space in the value is a run of white space and line breaks in the file.
			if sc < len(cur) && cur[sc] == v {
				sc++
				continue
			}
			if !skipSpace() {
				return line, col
			}
			// The value's run may be longer than what the file shows on this line (folding).
			for i+1 < len(value) && i+1 != target && (value[i+1] == ' ' || value[i+1] == '\n') && !(sc < len(cur) && cur[sc] == value[i+1]) {
				i++
			}
			continue
		}
		if sc >= len(cur) {
			return line, col
		}
		switch {
		case cur[sc] == v && !(double && v == '\\') && !(single && v == '\''):
			sc++
		case single && v == '\'' && sc+1 < len(cur) && cur[sc] == '\'' && cur[sc+1] == '\'':
			sc += 2
		case double && cur[sc] == '\\' && sc+1 < len(cur):
			w := escapeWidth(cur[sc+1])
			if w == 0 {
				return line, col
			}
			sc += w
		default:
			return line, col
		}
	}
	if target == len(value) {
		return sl + 1, sc + 1
	}
	return line, col
}

// escapeWidth is how many characters a double-quoted scalar's escape starting `\c` takes in the file,
// 0 for one this does not follow.
func escapeWidth(c rune) int {
	switch c {
	case 'x':
		return 4
	case 'u':
		return 6
	case 'U':
		return 10
	case '0', 'a', 'b', 't', '\t', 'n', 'v', 'f', 'r', 'e', ' ', '"', '/', '\\', 'N', '_', 'L', 'P':
		return 2
	}
	return 0
}

// runeOffset turns a 1-based line and column (in characters) of text into a 0-based character index.
func runeOffset(text string, off field.Offset) (int, bool) {
	if off.Line < 1 || off.Column < 1 {
		return 0, false
	}
	idx := 0
	lines := strings.Split(text, "\n")
	if off.Line > len(lines) {
		return 0, false
	}
	for _, l := range lines[:off.Line-1] {
		idx += utf8.RuneCountInString(l) + 1
	}
	if off.Column-1 > utf8.RuneCountInString(lines[off.Line-1]) {
		return 0, false
	}
	return idx + off.Column - 1, true
}

// Locate places every problem of errs that is about one of the set's files (Index.Place) and leaves
// out the ones inside an entry the meta-schema already refused (a field whose type is unknown is not
// also reported for its default): one problem, one line. Problems of files the set does not know, or of
// no file, are kept as they are.
func (s *Set) Locate(errs field.ErrorList) field.ErrorList {
	out := errs[:0:0]
	for _, e := range errs {
		x := s.Files[e.File]
		if x == nil {
			out = append(out, e)
			continue
		}
		if x.refuses(e.Field) {
			continue
		}
		x.Place(e)
		out = append(out, e)
	}
	return out
}
