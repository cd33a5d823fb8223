// Package sample makes realistic, deterministic synthetic write bodies for any resource of the model:
// the demo workspace, `recordsctl seed` and the behaviour tests use it. Values are chosen by field type
// and by field-key heuristics (people, companies, addresses, vocabularies, amounts, dates), fields of one
// body agree with each other (a contact's email uses their name and employer's domain; city, region,
// postal code, country, phone and time zone come from one place), and every value satisfies the field's
// type, format, options, bounds and lengths.
package sample

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/model"
)

// Refs gives existing record ids of a resource (same workspace) for reference fields; it may return nil.
type Refs func(resource string) []string

// Generator makes deterministic, realistic record bodies. Not safe for concurrent use.
type Generator struct {
	rnd    *rand.Rand
	seq    map[string]int // bodies made so far per resource; numbers names once a list is used up
	salt   uint64         // seed-dependent offset into name permutations
	home   company        // the workspace's own company: team member and department emails
	lookup Lookup         // reads referenced records (SetLookup); nil: bodies ignore stored data
}

type company struct{ name, domain string }

// New returns a generator seeded with seed (math/rand/v2 PCG source).
func New(seed uint64) *Generator {
	g := &Generator{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seq: map[string]int{}}
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
	return c.body
}

// Update returns a small update body: one to three writable fields (required or not) set to new valid
// values. An optional field is occasionally cleared with null. It is empty only when r has no field
// that can take a value. stored is the record being updated (nil when unknown); with a lookup
// (SetLookup) the body keeps the rules of the record it makes, adding the fields they need.
func (g *Generator) Update(r *model.Resource, stored map[string]any, refs Refs, now time.Time) map[string]any {
	c := g.record(r, now, false)
	var fields []*model.Field
	for _, f := range r.Declared() {
		if f.Writable() {
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
	return c.body
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

// value returns a valid JSON-shaped value for f, or false when none can be made (a reference without
// targets, impossible bounds).
func (c *rec) value(f *model.Field, refs Refs) (any, bool) {
	if f.Type == model.Reference {
		if refs == nil {
			return nil, false
		}
		ids := refs(f.Target)
		if len(ids) == 0 {
			return nil, false
		}
		return valid(f, ids[c.g.rnd.IntN(len(ids))])
	}
	if c.vocab != nil {
		if s, ok := attr(c.vocab.Attrs, f.Key); ok {
			if v, ok := valid(f, fromString(f, s)); ok {
				return v, true
			}
		}
	}
	if v, ok := valid(f, c.propose(f)); ok {
		return v, true
	}
	return valid(f, c.fallback(f))
}

// valid reports whether v passes the model's checks for f (and the phone pattern of the schema).
func valid(f *model.Field, v any) (any, bool) {
	if v == nil {
		return nil, false
	}
	cv, err := model.Canonical(f, v)
	if err != nil || model.Check(f, cv) != nil {
		return nil, false
	}
	if f.Type == model.Phone && strings.Trim(v.(string), "0123456789+().-/ xX#*") != "" {
		return nil, false
	}
	return v, true
}

// attr returns the value of key in a "k=v k=v" attribute list.
func attr(attrs, key string) (string, bool) {
	for _, kv := range strings.Fields(attrs) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func fromString(f *model.Field, s string) any {
	switch f.Type {
	case model.Integer, model.Decimal:
		return json.Number(s)
	case model.Boolean:
		return s == "true"
	}
	return s
}

func (c *rec) propose(f *model.Field) any {
	if f.Type.Textual() && len(f.Options) > 0 {
		return c.option(f)
	}
	switch f.Type {
	case model.Boolean:
		return c.boolean(f)
	case model.Integer:
		return c.integer(f)
	case model.Decimal:
		return c.decimal(f)
	case model.Date:
		return c.date(f)
	case model.DateTime:
		return c.datetime(f)
	case model.Email:
		return c.email(f)
	case model.URL:
		return c.url(f)
	case model.Phone:
		return c.phone()
	case model.String, model.Text:
		return fit(f, c.text(f))
	}
	return nil
}

// fallback is a plain value of f's type, used when the heuristic value does not fit the field.
func (c *rec) fallback(f *model.Field) any {
	switch f.Type {
	case model.String, model.Text:
		if len(f.Options) > 0 {
			return c.g.pick(f.Options)
		}
		return fit(f, f.Label+" "+strconv.Itoa(c.n))
	case model.Email:
		return "info@" + c.co.domain
	case model.URL:
		return "https://" + c.co.domain
	case model.Phone:
		return "+1 555-0100"
	case model.Integer:
		lo, hi, ok := intBounds(f)
		if !ok {
			return nil
		}
		return json.Number(strconv.FormatInt(clamp(0, lo, hi), 10))
	case model.Decimal:
		lo, hi, ok := centBounds(f)
		if !ok {
			return nil
		}
		return json.Number(formatCents(clamp(0, lo, hi)))
	}
	return nil
}

func (c *rec) option(f *model.Field) string {
	opts := f.Options
	if strings.Contains(f.Key, "currency") {
		if c.curr == "" {
			c.curr = currencyOf(c.place.Country)
		}
		if contains(opts, c.curr) && c.g.rnd.IntN(5) != 0 {
			return c.curr
		}
	}
	if f.Key == "status" && c.g.rnd.IntN(5) < 2 {
		return opts[0] // the initial state is the most common one
	}
	return c.g.pick(opts)
}

func currencyOf(country string) string {
	switch country {
	case "GB":
		return "GBP"
	case "DE", "FR", "NL", "ES", "IE":
		return "EUR"
	case "CA":
		return "CAD"
	case "AU":
		return "AUD"
	case "JP":
		return "JPY"
	case "CH":
		return "CHF"
	}
	return "USD"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *rec) boolean(f *model.Field) bool {
	k, p := f.Key, 0.5
	switch {
	case k == "is_active":
		p = 0.85
	case strings.HasPrefix(k, "is_default"):
		p = 0.1
	case strings.HasPrefix(k, "do_not"):
		p = 0.08
	case k == "is_final" || k == "is_closed":
		p = 0.25
	case k == "is_primary":
		p = 0.3
	case k == "is_milestone":
		p = 0.15
	case k == "is_billable" || k == "use_stage_probability" || k == "counts_toward_forecast":
		p = 0.75
	case k == "permission_to_publish":
		p = 0.6
	case k == "requires_note":
		p = 0.3
	}
	return c.g.rnd.Float64() < p
}

const maxSafeInt = 1<<53 - 1

// intBounds returns the integer range f accepts.
func intBounds(f *model.Field) (lo, hi int64, ok bool) {
	lo, hi = -maxSafeInt, maxSafeInt
	if f.Minimum != nil && *f.Minimum > -maxSafeInt {
		lo = int64(math.Ceil(*f.Minimum))
	}
	if f.Maximum != nil && *f.Maximum < maxSafeInt {
		hi = int64(math.Floor(*f.Maximum))
	}
	return lo, hi, lo <= hi
}

func clamp(v, lo, hi int64) int64 { return max(lo, min(hi, v)) }

func (c *rec) integer(f *model.Field) any {
	lo, hi, ok := intBounds(f)
	if !ok {
		return nil
	}
	g, k := c.g, f.Key
	var v int64
	switch {
	case k == "position" || strings.HasSuffix(k, "_position") || k == "sort_order":
		if c.isVocabulary() {
			v = int64(c.n - 1)
		} else {
			v = g.between(0, 100) * 10
		}
	case strings.Contains(k, "percent") || strings.Contains(k, "probability"):
		v = g.between(0, 20) * 5
	case strings.Contains(k, "duration_minutes"):
		v = g.pickInt(15, 30, 30, 45, 60, 60, 90, 120)
	case strings.Contains(k, "interval_minutes"):
		v = g.pickInt(5, 15, 30, 60)
	case k == "rating" || strings.HasSuffix(k, "_rating"):
		v = g.pickInt(2, 3, 4, 4, 4, 5, 5, 5, 5)
	case strings.Contains(k, "employee"):
		v = int64(math.Round(g.logUniform(2, 50000)))
	case k == "version":
		v = g.pickInt(1, 1, 1, 2, 2, 3, 4)
	case strings.HasSuffix(k, "_days"):
		v = g.pickInt(7, 14, 30, 45, 60, 90, 180, 365)
	case strings.Contains(k, "error"):
		v = g.between(0, 25)
	case strings.HasSuffix(k, "_count"):
		v = int64(math.Round(g.logUniform(0, 5000)))
	case strings.Contains(k, "year"):
		v = int64(c.now.Year()) - g.between(0, 30)
	case hi-lo <= 1000:
		v = g.between(lo, hi)
	default:
		v = g.between(0, 1000)
	}
	return json.Number(strconv.FormatInt(clamp(v, lo, hi), 10))
}

// centBounds returns the range f accepts, in hundredths.
func centBounds(f *model.Field) (lo, hi int64, ok bool) {
	const limit = int64(1e17)
	lo, hi = -limit, limit
	hundred := big.NewRat(100, 1)
	if f.Minimum != nil && !math.IsInf(*f.Minimum, 0) && !math.IsNaN(*f.Minimum) {
		r := new(big.Rat).Mul(new(big.Rat).SetFloat64(*f.Minimum), hundred)
		q := new(big.Int).Neg(floorRat(new(big.Rat).Neg(r))) // ceil
		if q.Cmp(big.NewInt(limit)) > 0 {
			return 0, 0, false
		}
		if q.Cmp(big.NewInt(-limit)) > 0 {
			lo = q.Int64()
		}
	}
	if f.Maximum != nil && !math.IsInf(*f.Maximum, 0) && !math.IsNaN(*f.Maximum) {
		q := floorRat(new(big.Rat).Mul(new(big.Rat).SetFloat64(*f.Maximum), hundred))
		if q.Cmp(big.NewInt(-limit)) < 0 {
			return 0, 0, false
		}
		if q.Cmp(big.NewInt(limit)) < 0 {
			hi = q.Int64()
		}
	}
	return lo, hi, lo <= hi
}

func floorRat(r *big.Rat) *big.Int {
	return new(big.Int).Div(r.Num(), r.Denom()) // Euclidean division: floor for a positive denominator
}

func formatCents(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	s := sign + strconv.FormatInt(v/100, 10)
	switch frac := v % 100; {
	case frac == 0:
	case frac%10 == 0:
		s += "." + strconv.FormatInt(frac/10, 10)
	default:
		s += "." + strconv.FormatInt(frac/10, 10) + strconv.FormatInt(frac%10, 10)
	}
	return s
}

func (c *rec) decimal(f *model.Field) any {
	lo, hi, ok := centBounds(f)
	if !ok {
		return nil
	}
	g, k := c.g, f.Key
	var v float64 // in units
	switch {
	case k == "latitude" || k == "lat":
		v = c.place.Lat + (g.rnd.Float64()-0.5)/10
	case k == "longitude" || k == "lng" || k == "lon":
		v = c.place.Lon + (g.rnd.Float64()-0.5)/10
	case strings.Contains(k, "revenue"):
		v = math.Round(g.logUniform(2e5, 2e9)/1000) * 1000
	case strings.Contains(k, "amount") || strings.Contains(k, "value") || strings.Contains(k, "budget"):
		v = math.Round(g.logUniform(2000, 500000)/100) * 100
	case k == "unit_price" || strings.HasSuffix(k, "price"):
		v = []float64{9.99, 19, 29, 49, 99, 149, 299, 499, 990, 1500, 2500, 12000}[g.rnd.IntN(12)]
	case strings.Contains(k, "cost"):
		v = math.Round(g.logUniform(5, 3000)*100) / 100
	case strings.Contains(k, "hourly") || strings.HasSuffix(k, "_rate") && !strings.Contains(k, "percent"):
		v = float64(g.between(16, 50) * 5)
	case strings.Contains(k, "rate") || strings.Contains(k, "tax"):
		v = []float64{0, 5, 7.25, 10, 12.5, 13, 19, 20, 21, 25}[g.rnd.IntN(10)]
	case strings.Contains(k, "discount"):
		v = float64(g.between(0, 12)) * 2.5
	case strings.Contains(k, "percent"):
		v = float64(g.between(0, 10000)) / 100
	case strings.Contains(k, "weight"):
		v = float64(g.between(1, 20)) / 2
	case strings.Contains(k, "logged"):
		v = float64(g.between(0, 240)) / 4
	case strings.Contains(k, "hours"):
		v = float64(g.between(2, 160)) / 2
	case strings.Contains(k, "quantity"):
		v = float64(g.between(1, 50))
	default:
		if hi-lo <= 1_000_000 {
			return json.Number(formatCents(g.between(lo, hi)))
		}
		v = float64(g.between(0, 1_000_000)) / 100
	}
	return json.Number(formatCents(clamp(int64(math.Round(v*100)), lo, hi)))
}

func (c *rec) isVocabulary() bool {
	_, ok := vocabularies[c.r.Name]
	return ok || strings.HasSuffix(c.r.Group, "_vocabulary")
}

// dateWindow returns the day offsets from now a date field of key usually falls in.
func dateWindow(k string) (from, to int) {
	for _, p := range []string{"completed", "resolved", "delivered", "signed", "decided", "requested", "converted",
		"last_", "received", "closed", "close_date", "approved", "sent", "joined", "hired"} {
		if strings.Contains(k, p) {
			return -730, 0
		}
	}
	switch {
	case strings.HasPrefix(k, "start"):
		return -365, 90
	case strings.Contains(k, "due") || strings.Contains(k, "expected") || strings.HasPrefix(k, "end") || strings.Contains(k, "expir"):
		return -60, 365
	}
	return -730, 365
}

func (c *rec) day(k string) time.Time {
	from, to := dateWindow(k)
	d := time.Date(c.now.Year(), c.now.Month(), c.now.Day(), 0, 0, 0, 0, time.UTC)
	return d.AddDate(0, 0, int(c.g.between(int64(from), int64(to))))
}

func (c *rec) date(f *model.Field) string {
	if strings.Contains(f.Key, "birth") {
		d := time.Date(1958, 1, 1, 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, int(c.g.between(0, 45*365))).Format(time.DateOnly)
	}
	return c.day(f.Key).Format(time.DateOnly)
}

func (c *rec) datetime(f *model.Field) string {
	t := c.day(f.Key).Add(time.Duration(c.g.between(7*12, 18*12)) * 5 * time.Minute)
	if from, to := dateWindow(f.Key); from < 0 && to == 0 && t.After(c.now) {
		t = c.now.Truncate(5 * time.Minute).Add(-time.Duration(c.g.between(1, 48)) * 5 * time.Minute)
	}
	return t.Format("2006-01-02T15:04:05Z")
}

// tidy drops optional values a create body's status makes unlikely (a loss reason on an open deal).
func (c *rec) tidy() {
	status, _ := c.body["status"].(string)
	drop := func(key string, keep bool) {
		if f, ok := c.r.Field(key); ok && !f.Required && !keep {
			delete(c.body, key)
		}
	}
	if _, ok := c.body["status"]; !ok {
		return
	}
	drop("loss_reason_id", status == "lost")
	drop("disqualification_reason_id", status == "disqualified")
	if c.r.Name == "deals" {
		drop("close_date", status != "open")
	}
	if c.r.Name == "activities" {
		drop("completed_at", status == "completed")
	}
}

// orderDates keeps start before end when a body has both: equal types are swapped; a datetime end
// before a date start moves the start back to that day or a little earlier.
func (c *rec) orderDates() {
	for _, p := range [][2]string{{"start_date", "due_date"}, {"start_date", "end_date"}, {"requested_at", "decided_at"},
		{"start_date", "completed_at"}, {"start_date", "signed_at"}} {
		a, okA := c.body[p[0]].(string)
		b, okB := c.body[p[1]].(string)
		fa, _ := c.r.Field(p[0])
		fb, _ := c.r.Field(p[1])
		if !okA || !okB || fa == nil || fb == nil {
			continue
		}
		switch {
		case fa.Type == fb.Type && a > b:
			c.body[p[0]], c.body[p[1]] = b, a
		case fa.Type == model.Date && fb.Type == model.DateTime && b[:10] < a:
			d, err := time.Parse(time.DateOnly, b[:10])
			if err != nil {
				continue
			}
			floor := c.now.AddDate(-2, 0, 0)
			if d = d.AddDate(0, 0, -int(c.g.between(0, 30))); d.Before(floor) {
				d = floor
			}
			if v, ok := valid(fa, d.Format(time.DateOnly)); ok && v.(string) <= b[:10] {
				c.body[p[0]] = v
			}
		}
	}
}

// slug folds s to lowercase ASCII letters and digits.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteString(fold(r))
		}
	}
	return b.String()
}

func fold(r rune) string {
	switch r {
	case 'à', 'á', 'â', 'ã', 'ä', 'å', 'ą':
		return "a"
	case 'ç', 'ć':
		return "c"
	case 'è', 'é', 'ê', 'ë', 'ę':
		return "e"
	case 'ì', 'í', 'î', 'ï':
		return "i"
	case 'ñ', 'ń':
		return "n"
	case 'ò', 'ó', 'ô', 'õ', 'ö', 'ø':
		return "o"
	case 'ù', 'ú', 'û', 'ü':
		return "u"
	case 'ý', 'ÿ':
		return "y"
	case 'ß':
		return "ss"
	case 'ł':
		return "l"
	case 'ś', 'ş':
		return "s"
	case 'ź', 'ż':
		return "z"
	}
	return ""
}

func (c *rec) emailLocal() string {
	f, l := slug(c.first), slug(c.last)
	switch c.g.rnd.IntN(20) {
	case 0, 1, 2:
		return f[:1] + "." + l
	case 3, 4:
		return f
	case 5:
		return f + l
	case 6:
		return f + "." + l + strconv.Itoa(int(c.g.between(2, 99)))
	}
	return f + "." + l
}

func (c *rec) email(f *model.Field) string {
	local := c.emailLocal()
	if c.r.Name == "entity_departments" {
		local = "team"
		if name, ok := c.body["name"].(string); ok && slug(name) != "" {
			local = slug(name)
		}
	}
	return local + "@" + c.co.domain
}

func (c *rec) hasField(key string) bool {
	_, ok := c.r.Field(key)
	return ok
}

func (c *rec) url(f *model.Field) string {
	k := f.Key
	host := strings.SplitN(c.co.domain, ".", 2)[0]
	switch {
	case strings.Contains(k, "linkedin"):
		if c.hasField("first_name") || c.hasField("last_name") {
			return "https://www.linkedin.com/in/" + slug(c.first) + "-" + slug(c.last) + "-" + strconv.FormatInt(c.g.between(100, 9999), 16)
		}
		return "https://www.linkedin.com/company/" + host
	case strings.Contains(k, "avatar") || strings.Contains(k, "photo") || strings.Contains(k, "image"):
		return "https://cdn." + c.g.home.domain + "/avatars/" + slug(c.first) + "-" + slug(c.last) + ".png"
	case strings.Contains(k, "battlecard"):
		return "https://wiki." + c.g.home.domain + "/competitors/" + host
	case strings.Contains(k, "document") || strings.Contains(k, "doc_"):
		return "https://docs." + c.g.home.domain + "/" + strings.ReplaceAll(c.r.Name, "_", "-") + "/" + strconv.Itoa(c.n) + ".pdf"
	case strings.Contains(k, "media") || strings.Contains(k, "video"):
		return "https://media." + c.g.home.domain + "/" + strings.ReplaceAll(c.r.Name, "_", "-") + "/" + strconv.Itoa(c.n) + ".mp4"
	}
	return "https://www." + c.co.domain
}

// digits replaces every '#' in pattern with a random digit and every '@' with a random capital letter.
func (c *rec) digits(pattern string) string {
	var b strings.Builder
	for _, r := range pattern {
		switch r {
		case '#':
			b.WriteByte(byte('0' + c.g.rnd.IntN(10)))
		case '@':
			b.WriteByte(byte('A' + c.g.rnd.IntN(26)))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (c *rec) phone() string { return c.digits(c.place.Phone) }

func (c *rec) street() string {
	name, num := c.g.pick(c.place.Streets), strconv.FormatInt(c.g.between(1, 480), 10)
	if c.place.NumberFirst {
		return num + " " + name
	}
	return name + " " + num
}

// fill replaces placeholders in s with this body's person, company and place.
func (c *rec) fill(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	return strings.NewReplacer(
		"{first}", c.first, "{last}", c.last, "{company}", c.co.name, "{city}", c.place.Name,
		"{product}", c.g.pick(productNames), "{project}", c.g.pick(projectKinds),
		"{deliverable}", c.g.pick(namedLists["project_deliverables"]),
	).Replace(s)
}

// text picks a realistic string for a field without options by its key and resource.
func (c *rec) text(f *model.Field) string {
	g, k := c.g, f.Key
	switch {
	case k == "first_name" || k == "given_name":
		return c.first
	case k == "last_name" || k == "family_name" || k == "surname":
		return c.last
	case k == "full_name" || k == "contact_name" || k == "author_name" || k == "person_name":
		return c.first + " " + c.last
	case k == "company_name" || k == "account_name" || k == "organization" || k == "organisation":
		return c.co.name
	case k == "name":
		return c.recordName()
	case k == "title" || k == "subject" || k == "headline":
		return c.title()
	case k == "domain" || strings.HasSuffix(k, "_domain"):
		return c.co.domain
	case strings.Contains(k, "job_title") || k == "author_title":
		return g.pick(jobTitles)
	case k == "role":
		return g.pick(memberRoles)
	case strings.Contains(k, "color") || strings.Contains(k, "colour"):
		return g.pick(colors)
	case strings.Contains(k, "street") || k == "address" || strings.HasSuffix(k, "_address"):
		return c.street()
	case strings.HasSuffix(k, "city"):
		return c.place.Name
	case strings.HasSuffix(k, "region") || strings.HasSuffix(k, "state") || strings.HasSuffix(k, "province"):
		return c.place.Region
	case strings.Contains(k, "postal") || strings.Contains(k, "zip"):
		return c.digits(c.place.Postal)
	case strings.Contains(k, "country"):
		if f.MaxLength > 0 && f.MaxLength <= 3 {
			return c.place.Country
		}
		return c.place.CountryName
	case strings.Contains(k, "timezone") || strings.Contains(k, "time_zone"):
		return c.place.TZ
	case k == "locale" || k == "language":
		return c.place.Locale
	case k == "icon" || strings.HasSuffix(k, "_icon"):
		return g.pick(icons)
	case k == "sku":
		prefix := slug(c.recordName()) + "xxx"
		return strings.ToUpper(prefix[:3]) + "-" + strconv.Itoa(1000+c.n)
	case k == "code" && c.r.Name == "projects":
		return "PRJ-" + strconv.Itoa(1000+c.n)
	case k == "code" && c.r.Name == "entity_departments":
		return g.pick(departmentCodes) + "-" + strconv.Itoa(10+c.n)
	case k == "cost_center" || k == "cost_centre":
		return "CC-" + strconv.FormatInt(g.between(1000, 9999), 10)
	case k == "tax_code":
		return "TX-" + strconv.FormatInt(g.between(100, 999), 10)
	case k == "document_number":
		return "SOW-" + strconv.Itoa(c.now.Year()-int(g.between(0, 1))) + "-" + pad3(c.n)
	case k == "code" || strings.HasSuffix(k, "_code") || strings.HasSuffix(k, "_number"):
		return strings.ToUpper(slug(c.r.Name)[:min(3, len(slug(c.r.Name)))]) + "-" + strconv.Itoa(1000+c.n)
	case strings.Contains(k, "version"):
		return g.pick(versionLabels)
	case k == "unit_of_measure" || k == "unit":
		return g.pick(unitsOfMeasure)
	case strings.Contains(k, "schedule") || strings.Contains(k, "cron"):
		return g.pick(cronSchedules)
	case k == "trigger_resource":
		return g.pick(triggerResources)
	case k == "trigger_field":
		return g.pick(triggerFields)
	case k == "next_step":
		return g.pick(nextSteps)
	case k == "location":
		return c.fill(g.pick(meetingPlaces))
	case k == "subject_template":
		return g.pick(subjectTemplates)
	case f.Type == model.Text || strings.Contains(k, "description") || strings.Contains(k, "note") ||
		strings.Contains(k, "summary") || strings.Contains(k, "comment"):
		return c.sentences(f)
	}
	return f.Label + " " + strconv.Itoa(c.n)
}

func pad3(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

// recordName names a record the way people using that resource would.
func (c *rec) recordName() string {
	if c.name == "" {
		c.name = c.makeName()
	}
	return c.name
}

func (c *rec) makeName() string {
	g := c.g
	switch c.r.Name {
	case "companies", "competitors":
		return c.co.name
	case "deals":
		return c.co.name + " – " + g.pick(productNames) + " " + g.pick(dealKinds)
	case "projects":
		return c.co.name + " – " + g.pick(projectKinds)
	case "products":
		total := len(productNames) * len(productTiers)
		k := c.n - 1
		m := (k%total*stride(total) + int((g.salt+uint64(hash(c.r.Name)))%uint64(total))) % total
		name := productNames[m/len(productTiers)] + " – " + productTiers[m%len(productTiers)]
		if cycle := k / total; cycle > 0 {
			name += " v" + strconv.Itoa(cycle+1)
		}
		return name
	case "locations":
		return c.place.Name + " " + g.pick(locationKinds)
	case "entity_members", "contacts", "leads":
		return c.first + " " + c.last
	}
	return c.r.Label + " " + strconv.Itoa(c.n)
}

func (c *rec) title() string {
	list, ok := titles[c.r.Name]
	if !ok {
		list = titles[""]
	}
	return c.fill(c.g.pick(list))
}

// sentences returns one to three distinct sentences suited to the field.
func (c *rec) sentences(f *model.Field) string {
	k := f.Key
	list, ok := sentences[k]
	switch {
	case k == "description":
		if list, ok = sentences["description:"+c.r.Name]; !ok {
			list, ok = sentences["description:*"], true
		}
	case ok:
	case strings.Contains(k, "note"):
		list = sentences["notes"]
	case strings.Contains(k, "summary"):
		list = sentences["summary"]
	case strings.Contains(k, "comment"):
		list = sentences["comment"]
	default:
		list = sentences["*"]
	}
	n := 1 + c.g.rnd.IntN(3)
	if k == "body_template" {
		n = len(list)
	}
	start := c.g.rnd.IntN(len(list))
	if k == "body_template" {
		start = 0
	}
	parts := make([]string, 0, n)
	for i := 0; i < n && i < len(list); i++ {
		parts = append(parts, c.fill(list[(start+i)%len(list)]))
	}
	sep := " "
	if k == "body_template" {
		sep = "\n\n"
	}
	return strings.Join(parts, sep)
}

// fit pads s to the field's minimum length and trims it, by runes, to its maximum.
func fit(f *model.Field, s string) string {
	if n := utf8.RuneCountInString(s); n < f.MinLength {
		base := s
		if strings.TrimSpace(base) == "" {
			base, s = "x", "x"
		}
		for utf8.RuneCountInString(s) < f.MinLength {
			s += " " + base
		}
	}
	if f.MaxLength > 0 && utf8.RuneCountInString(s) > f.MaxLength {
		s = string([]rune(s)[:f.MaxLength])
		if t := strings.TrimRight(s, " "); utf8.RuneCountInString(t) >= f.MinLength {
			s = t
		}
	}
	return s
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
