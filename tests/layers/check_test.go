package layers_test

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// layer is one row of the layer table: a name for messages and the patterns of its packages.
type layer struct {
	name     string
	patterns []string
}

// edge is an import allowed between two packages of one layer.
type edge struct{ from, to string }

// denial forbids the packages matching from to import those matching deny: through any chain of imports
// (reach), or by an import of their own (direct).
type denial struct {
	from   string
	deny   []string
	direct bool
	why    string
}

const (
	reach  = false
	direct = true
)

func pkgs(patterns ...string) []string { return patterns }

// rules is everything the checker applies.
type rules struct {
	layers   []layer
	siblings []edge
	denials  []denial
	isHelper func(rel string) bool // rel: the path inside the module
}

// graph is an import graph: each package's direct imports (non-test files only, as `go list` reports
// them), for the module's packages and for every package they reach.
type graph struct {
	module  string
	imports map[string][]string
}

// match reports whether importPath matches pattern (see rules_test.go for the syntax).
func (g graph) match(pattern, importPath string) bool {
	if rest, ok := strings.CutPrefix(pattern, "."); ok {
		pattern = g.module + rest
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok && importPath == base {
		return true
	}
	re, ok := patterns.Load(pattern)
	if !ok {
		re, _ = patterns.LoadOrStore(pattern,
			regexp.MustCompile("^"+strings.ReplaceAll(regexp.QuoteMeta(pattern), `\.\.\.`, `.*`)+"$"))
	}
	return re.(*regexp.Regexp).MatchString(importPath)
}

var patterns sync.Map // pattern → *regexp.Regexp

func (g graph) inModule(p string) bool { return p == g.module || strings.HasPrefix(p, g.module+"/") }

// rel is the path of a module package inside the module ("engine/field"); other paths are returned as is.
func (g graph) rel(p string) string {
	if p == g.module {
		return "."
	}
	return strings.TrimPrefix(p, g.module+"/")
}

// reached returns every package p reaches through its imports, each with the package that imports it on
// a shortest chain from p.
func (g graph) reached(p string) map[string]string {
	parent := map[string]string{}
	queue := []string{p}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range g.imports[cur] {
			if _, seen := parent[imp]; !seen && imp != p {
				parent[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return parent
}

// path returns the shortest chain of imports from p to d, both included.
func (g graph) path(p, d string, parent map[string]string) []string {
	steps := []string{d}
	for cur := d; cur != p; {
		cur = parent[cur]
		steps = append(steps, cur)
	}
	slices.Reverse(steps)
	return steps
}

// spell writes a chain of imports for a message.
func (g graph) spell(chain []string) string {
	rels := make([]string, len(chain))
	for i, p := range chain {
		rels[i] = g.rel(p)
	}
	return strings.Join(rels, " → ")
}

// check applies r to g and returns the violations, sorted; none means the graph keeps the rules.
func check(g graph, r rules) []string {
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	var mod []string
	for p := range g.imports {
		if g.inModule(p) {
			mod = append(mod, p)
		}
	}
	sort.Strings(mod)

	// Each module package in exactly one layer; each pattern matching some package.
	layerOf := map[string]int{}
	used := map[string]bool{}
	for _, p := range mod {
		var in []int
		for i, l := range r.layers {
			for _, pat := range l.patterns {
				if g.match(pat, p) {
					used[pat] = true
					if !slices.Contains(in, i) {
						in = append(in, i)
					}
				}
			}
		}
		switch len(in) {
		case 0:
			report("%s is in no layer: add it to the layer table", g.rel(p))
		case 1:
			layerOf[p] = in[0]
		default:
			report("%s is in more than one layer: %q and %q", g.rel(p), r.layers[in[0]].name, r.layers[in[1]].name)
		}
	}
	for _, l := range r.layers {
		for _, pat := range l.patterns {
			if !used[pat] {
				report("layer %q: %s matches no package", l.name, pat)
			}
		}
	}
	for _, s := range r.siblings {
		f, t := g.module+strings.TrimPrefix(s.from, "."), g.module+strings.TrimPrefix(s.to, ".")
		lf, okf := layerOf[f]
		lt, okt := layerOf[t]
		if !okf || !okt || lf != lt || !slices.Contains(g.imports[f], t) {
			report("sibling edge %s → %s: not an import between two packages of one layer", s.from, s.to)
		}
	}
	for _, d := range r.denials {
		if !slices.ContainsFunc(mod, func(p string) bool { return g.match(d.from, p) }) {
			report("denial for %s (%s): matches no package", d.from, d.why)
		}
	}

	for _, p := range mod {
		lp, placed := layerOf[p]
		parent := g.reached(p)
		deps := make([]string, 0, len(parent))
		for d := range parent {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		// Every package p reaches is checked. A violation is reported from the package where it starts
		// on the chain (the import that goes up; the last package a denial names; the last package that
		// is no helper), so that the packages reaching it through others repeat the same message once.
		for _, d := range deps {
			chain := g.path(p, d, parent)
			if ld, ok := layerOf[d]; placed && ok && ld < lp {
				up := chain // the whole chain, unless one import on it goes up (it always does within the module)
				for i := range chain[:len(chain)-1] {
					la, oka := layerOf[chain[i]]
					lb, okb := layerOf[chain[i+1]]
					if oka && okb && lb < la {
						up = chain[i : i+2]
						break
					}
				}
				report("%s: layer %q imports layer %q above it", g.spell(up), r.layers[layerOf[up[0]]].name, r.layers[layerOf[up[len(up)-1]]].name)
			}
			if g.inModule(d) && r.isHelper(g.rel(d)) && !r.isHelper(g.rel(p)) {
				first := slices.IndexFunc(chain, func(a string) bool { return g.inModule(a) && r.isHelper(g.rel(a)) })
				report("%s: %s imports the test helper %s outside its tests", g.spell(chain[first-1:first+1]), g.rel(chain[first-1]), g.rel(chain[first]))
			}
			for _, den := range r.denials {
				if !g.match(den.from, p) || den.direct && len(chain) > 2 ||
					!slices.ContainsFunc(den.deny, func(pat string) bool { return g.match(pat, d) }) {
					continue
				}
				last := 0
				for i, a := range chain[:len(chain)-1] {
					if g.match(den.from, a) {
						last = i
					}
				}
				report("%s: denied (%s)", g.spell(chain[last:]), den.why)
			}
		}
		for _, d := range g.imports[p] {
			if ld, ok := layerOf[d]; placed && ok && ld == lp && d != p &&
				!slices.Contains(r.siblings, edge{"./" + g.rel(p), "./" + g.rel(d)}) {
				report("%s → %s: both in layer %q, and the edge is not listed in siblings", g.rel(p), g.rel(d), r.layers[lp].name)
			}
		}
	}
	sort.Strings(bad)
	return slices.Compact(bad)
}
