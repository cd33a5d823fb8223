// Package sample makes realistic, deterministic synthetic write bodies for any resource of the model:
// the demo workspace, `recordsctl seed` and the behaviour tests use it. Values are chosen by field type
// and by field-key heuristics (people, companies, addresses, vocabularies, amounts, dates), fields of one
// body agree with each other (a contact's email uses their name and employer's domain; city, region,
// postal code, country, phone and time zone come from one place), and every value satisfies the field's
// type, format, options, bounds and lengths.
package sample

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
)

// Refs gives existing record ids of a resource (same workspace) for reference fields; it may return nil.
type Refs func(resource string) []string

// Generator makes deterministic, realistic record bodies. Not safe for concurrent use.
type Generator struct {
	rnd    *rand.Rand
	seq    map[string]int  // bodies made so far per resource; numbers names once a list is used up
	salt   uint64          // seed-dependent offset into name permutations
	home   company         // the workspace's own company: team member and department emails
	lookup Lookup          // reads referenced records (SetLookup); nil: bodies ignore stored data
	taken  map[string]bool // values of unique keys handed out, by "resource.key\x00value"
}

type company struct{ name, domain string }

// New returns a generator seeded with seed (math/rand/v2 PCG source).
func New(seed uint64) *Generator {
	g := &Generator{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seq: map[string]int{}, taken: map[string]bool{}}
	g.salt = g.rnd.Uint64()
	g.home = g.companyAt(g.rnd.IntN(len(companyPrefixes)), g.rnd.IntN(len(companySuffixes)), "")
	return g
}

// Body returns a JSON-shaped create body for r: map keys are field keys, values are what encoding/json
// with UseNumber would decode (string, bool, json.Number). It sets every required writable field and
// about 70% of the optional writable ones, never read-only or engine-managed fields. Reference fields
// take a random id from refs(target) and are left out when there is none, even when required.
// now anchors dates: dates and datetimes fall within about two years before and one year after it
// (birthdays excepted).
func (g *Generator) Body(r *model.Resource, refs Refs, now time.Time) map[string]any {
	c := g.record(r, now, true)
	var fields []*model.Field
	for _, f := range r.Declared() {
		if f.Writable() {
			fields = append(fields, f)
		}
	}
	c.setFields(fields, refs, "")
	c.tidy()
	c.orderDates()
	c.cohere(nil, refs)
	c.keepRules(nil, true)
	g.distinct(r.Name, r.Declared(), c.body, "")
	return c.body
}

// distinct keeps the text values of the unique fields among fields (under prefix+key in body) of
// resource's bodies apart: a value handed out before gets a numbered variant (local+2@domain for an
// email, value-2 otherwise).
func (g *Generator) distinct(resource string, fields []*model.Field, body map[string]any, prefix string) {
	for _, f := range fields {
		v, ok := body[prefix+f.Key].(string)
		if !f.Unique || !ok {
			continue
		}
		id := resource + "." + prefix + f.Key + "\x00"
		base := v
		for n := 2; g.taken[id+v]; n++ {
			if at := strings.LastIndexByte(base, '@'); f.Type == model.Email && at > 0 {
				v = base[:at] + "+" + strconv.Itoa(n) + base[at:]
			} else {
				v = base + "-" + strconv.Itoa(n)
			}
		}
		g.taken[id+v] = true
		body[prefix+f.Key] = v
	}
}

// Update returns a small update body: one to three writable fields (required or not) set to new valid
// values. An optional field is occasionally cleared with null. It is empty only when r has no field
// that can take a value. stored is the record being updated (nil when unknown); with a lookup
// (SetLookup) the body keeps the rules of the record it makes, adding the fields they need. It never
// changes a unique key (another record may hold the new value).
func (g *Generator) Update(r *model.Resource, stored map[string]any, refs Refs, now time.Time) map[string]any {
	// A body that breaks one of the resource's rules is drawn again, a few times, before keepRules
	// repairs the last one by dropping values (which could leave it empty).
	for attempt := 0; ; attempt++ {
		c := g.update(r, stored, refs, now)
		if attempt == 3 || len(r.FailedRules(c.ruleCheck(stored, false))) == 0 {
			c.keepRules(stored, false)
			return c.body
		}
	}
}

func (g *Generator) update(r *model.Resource, stored map[string]any, refs Refs, now time.Time) *rec {
	c := g.record(r, now, false)
	var fields []*model.Field
	for _, f := range r.Declared() {
		if f.Writable() && !f.Unique {
			fields = append(fields, f)
		}
	}
	g.rnd.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	want := 1 + g.rnd.IntN(3)
	for _, f := range fields {
		if len(c.body) == want {
			break
		}
		if !f.Required && g.rnd.IntN(10) == 0 {
			c.body[f.Key] = nil
			continue
		}
		if v, ok := c.value(f, refs); ok {
			c.body[f.Key] = v
		}
	}
	c.orderDates()
	c.cohere(stored, refs)
	return c
}

// rec is the state of one body being made: the person, company and place its fields describe.
type rec struct {
	g     *Generator
	r     *model.Resource
	now   time.Time // UTC
	n     int       // 1-based number of this body among r's bodies
	first string
	last  string
	co    company
	place *city
	vocab *vocab // the vocabulary entry this create body names, if any
	name  string // precomputed record name ("" to derive it from the resource)
	curr  string // currency chosen for this body
	body  map[string]any
}

func (g *Generator) record(r *model.Resource, now time.Time, create bool) *rec {
	g.seq[r.Name]++
	c := &rec{g: g, r: r, now: now.UTC(), n: g.seq[r.Name], body: map[string]any{}}
	c.first, c.last = g.pick(firstNames), g.pick(lastNames)
	c.place = &cities[g.rnd.IntN(len(cities))]
	switch r.Name {
	case "companies", "competitors":
		c.co = g.uniqueCompany(r.Name, c.n)
	case "entity_members", "entity_departments":
		c.co = g.home
	default:
		c.co = g.companyAt(g.rnd.IntN(len(companyPrefixes)), g.rnd.IntN(len(companySuffixes)), "")
	}
	if list, ok := vocabularies[r.Name]; ok {
		i := c.n - 1
		v := list[i%len(list)]
		c.name = v.Name + cycleSuffix(i/len(list))
		if create {
			c.vocab = &v
		}
	} else if list, ok := namedLists[r.Name]; ok {
		i := c.n - 1
		c.name = list[i%len(list)] + cycleSuffix(i/len(list))
	}
	return c
}

func cycleSuffix(cycle int) string {
	if cycle == 0 {
		return ""
	}
	return " " + strconv.Itoa(cycle+1)
}

func (g *Generator) pick(list []string) string { return list[g.rnd.IntN(len(list))] }

func (g *Generator) pickInt(list ...int64) int64 { return list[g.rnd.IntN(len(list))] }

// between returns a uniform integer in [lo, hi].
func (g *Generator) between(lo, hi int64) int64 { return lo + g.rnd.Int64N(hi-lo+1) }

// logUniform returns a value between lo and hi, spread evenly on a log scale (amounts, head counts).
func (g *Generator) logUniform(lo, hi float64) float64 {
	a, b := math.Log(lo+1), math.Log(hi+1)
	return math.Exp(a+g.rnd.Float64()*(b-a)) - 1
}

// companyAt names the company at (prefix, suffix); tag distinguishes repeated combinations.
func (g *Generator) companyAt(pi, si int, tag string) company {
	p, s := companyPrefixes[pi], companySuffixes[si]
	host := slug(p) + slug(s)
	if (pi+si)%2 == 1 {
		host = slug(p) + "-" + slug(s)
	}
	return company{name: p + " " + s, domain: host + tag + "." + tlds[(pi*7+si*3)%len(tlds)]}
}

// uniqueCompany names the n-th company of resource so that names do not repeat: a seed-dependent
// permutation walks every prefix×suffix pair, then legal forms and finally numbers tell repeats apart.
func (g *Generator) uniqueCompany(resource string, n int) company {
	total := len(companyPrefixes) * len(companySuffixes)
	k := n - 1
	cycle := k / total
	m := int((uint64(k%total)*uint64(stride(total)) + g.salt + uint64(hash(resource))) % uint64(total))
	tag := ""
	if cycle > 0 {
		tag = strconv.Itoa(cycle + 1)
	}
	co := g.companyAt(m/len(companySuffixes), m%len(companySuffixes), tag)
	switch {
	case cycle > len(legalForms):
		co.name += " " + strconv.Itoa(cycle+1)
	case cycle > 0:
		co.name += " " + legalForms[cycle-1]
	}
	return co
}

// stride returns a step coprime with total, so that i*stride mod total visits every residue.
func stride(total int) int {
	s := total*5/8 + 1
	for gcd(s, total) != 1 {
		s++
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// Custom adds values for the custom fields of r to body, under their write keys (cf__<key>): fields
// are model fields keyed by write key, as customfields.Fields gives them. Like declared fields, a
// required one is always set and an optional one about 70% of the time.
func (g *Generator) Custom(r *model.Resource, fields []*model.Field, body map[string]any, refs Refs, now time.Time) {
	c := &rec{g: g, r: r, now: now.UTC(), n: g.seq[r.Name], body: body}
	c.first, c.last = g.pick(firstNames), g.pick(lastNames)
	c.place = &cities[g.rnd.IntN(len(cities))]
	c.co = g.companyAt(g.rnd.IntN(len(companyPrefixes)), g.rnd.IntN(len(companySuffixes)), "")
	c.setFields(fields, refs, "cf__")
	g.distinct(r.Name, fields, body, "cf__")
}

// setFields sets every required field of fields and about 70% of the optional ones, under prefix+key.
func (c *rec) setFields(fields []*model.Field, refs Refs, prefix string) {
	for _, f := range fields {
		if !f.Required && c.g.rnd.IntN(10) >= 7 {
			continue
		}
		if v, ok := c.value(f, refs); ok {
			c.body[prefix+f.Key] = v
		}
	}
}
