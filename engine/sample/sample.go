// Package sample makes realistic, deterministic synthetic record bodies for any resource of the model:
// the demo workspace, `recordsctl seed` and the behaviour tests use it. Values are chosen by field type
// and by field-name heuristics, and always satisfy the field's options, bounds and lengths.
package sample

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/model"
)

// Refs gives existing record ids of a resource (same workspace) for reference fields; it may return nil.
type Refs func(resource string) []string

// Generator makes deterministic, realistic record bodies. It is not safe for concurrent use.
type Generator struct {
	rnd *rand.Rand
	seq int
}

// New returns a generator seeded with seed.
func New(seed uint64) *Generator {
	return &Generator{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Body returns a create body for r: every required settable field and about 70% of the optional ones.
// Read-only and engine-managed fields are never set. now anchors dates.
func (g *Generator) Body(r *model.Resource, refs Refs, now time.Time) map[string]any {
	g.seq++
	ctx := g.context(r)
	body := map[string]any{}
	for _, f := range r.Declared() {
		if !f.Writable() {
			continue
		}
		if !f.Required && g.rnd.IntN(10) >= 7 {
			continue
		}
		if v, ok := g.value(r, f, refs, now, ctx); ok {
			body[f.Key] = v
		}
	}
	return body
}

// Update returns a body changing one to three writable fields to new valid values.
func (g *Generator) Update(r *model.Resource, refs Refs, now time.Time) map[string]any {
	g.seq++
	ctx := g.context(r)
	var writable []*model.Field
	for _, f := range r.Declared() {
		if f.Writable() {
			writable = append(writable, f)
		}
	}
	body := map[string]any{}
	for i := 0; i < 3 && len(writable) > 0; i++ {
		f := writable[g.rnd.IntN(len(writable))]
		if v, ok := g.value(r, f, refs, now, ctx); ok {
			body[f.Key] = v
		}
	}
	return body
}

// person and company tie names, emails and domains of one body together.
type bodyContext struct {
	first, last, company, domain string
}

func (g *Generator) context(r *model.Resource) bodyContext {
	c := bodyContext{
		first:   g.pick(firstNames),
		last:    g.pick(lastNames),
		company: g.pick(companyPrefixes) + " " + g.pick(companySuffixes),
	}
	c.domain = strings.ToLower(strings.NewReplacer(" ", "", "&", "and", ".", "", "'", "").Replace(c.company)) + ".com"
	return c
}

func (g *Generator) pick(list []string) string { return list[g.rnd.IntN(len(list))] }

func (g *Generator) value(r *model.Resource, f *model.Field, refs Refs, now time.Time, c bodyContext) (any, bool) {
	key := f.Key
	switch f.Type {
	case model.Reference:
		var ids []string
		if refs != nil {
			ids = refs(f.Target)
		}
		if len(ids) == 0 {
			return nil, false
		}
		return ids[g.rnd.IntN(len(ids))], true
	case model.Boolean:
		if strings.HasPrefix(key, "is_default") {
			return g.rnd.IntN(8) == 0, true
		}
		if strings.HasPrefix(key, "do_not") {
			return g.rnd.IntN(10) == 0, true
		}
		return g.rnd.IntN(3) != 0, true
	case model.Integer:
		return json.Number(strconv.FormatInt(g.integer(f), 10)), true
	case model.Decimal:
		return json.Number(g.decimal(f)), true
	case model.Date:
		return now.AddDate(0, 0, g.rnd.IntN(3*365)-2*365).Format(time.DateOnly), true
	case model.DateTime:
		t := now.Add(time.Duration(g.rnd.IntN(3*365*24)-2*365*24) * time.Hour).Add(time.Duration(g.rnd.IntN(60)) * time.Minute)
		return t.UTC().Truncate(time.Minute).Format(time.RFC3339), true
	case model.Email:
		return fit(f, strings.ToLower(c.first+"."+c.last)+strconv.Itoa(g.seq%1000)+"@"+c.domain), true
	case model.URL:
		switch {
		case strings.Contains(key, "linkedin"):
			return fit(f, "https://www.linkedin.com/company/"+strings.TrimSuffix(c.domain, ".com")), true
		case strings.Contains(key, "avatar"):
			return fit(f, "https://images."+c.domain+"/avatars/"+strconv.Itoa(g.seq)+".png"), true
		}
		return fit(f, "https://www."+c.domain+"/"+strings.ReplaceAll(key, "_", "-")), true
	case model.Phone:
		return fmt.Sprintf("+1 %03d-555-%04d", 200+g.rnd.IntN(700), g.rnd.IntN(10000)), true
	}
	if len(f.Options) > 0 {
		return f.Options[g.rnd.IntN(len(f.Options))], true
	}
	return fit(f, g.text(r, f, c)), true
}

func (g *Generator) integer(f *model.Field) int64 {
	lo, hi := int64(0), int64(1000)
	switch {
	case strings.Contains(f.Key, "percent") || strings.Contains(f.Key, "probability"):
		hi = 100
	case strings.Contains(f.Key, "position") || strings.Contains(f.Key, "order") || strings.Contains(f.Key, "level"):
		lo, hi = 1, 10
	case strings.Contains(f.Key, "minutes"):
		lo, hi = 15, 120
	case strings.Contains(f.Key, "employee"):
		lo, hi = 5, 20000
	}
	if f.Minimum != nil && float64(lo) < *f.Minimum {
		lo = int64(*f.Minimum)
	}
	if f.Maximum != nil && float64(hi) > *f.Maximum {
		hi = int64(*f.Maximum)
	}
	if hi < lo {
		hi = lo
	}
	return lo + g.rnd.Int64N(hi-lo+1)
}

func (g *Generator) decimal(f *model.Field) string {
	lo, hi := 0.0, 250000.0
	switch {
	case strings.Contains(f.Key, "percent") || strings.Contains(f.Key, "rate"):
		hi = 100
	case strings.Contains(f.Key, "hours"):
		hi = 200
	case strings.Contains(f.Key, "weight"):
		hi = 10
	}
	if f.Minimum != nil && lo < *f.Minimum {
		lo = *f.Minimum
	}
	if f.Maximum != nil && hi > *f.Maximum {
		hi = *f.Maximum
	}
	if hi < lo {
		hi = lo
	}
	cents := int64(lo*100) + g.rnd.Int64N(int64((hi-lo)*100)+1)
	if cents < int64(lo*100) {
		cents = int64(lo * 100)
	}
	return strconv.FormatFloat(float64(cents)/100, 'f', -1, 64)
}

// text picks a realistic string for a field by its key and resource.
func (g *Generator) text(r *model.Resource, f *model.Field, c bodyContext) string {
	key := f.Key
	switch {
	case key == "first_name":
		return c.first
	case key == "last_name":
		return c.last
	case key == "full_name" || key == "contact_name":
		return c.first + " " + c.last
	case key == "company_name":
		return c.company
	case key == "domain":
		return c.domain
	case key == "color":
		return fmt.Sprintf("#%06X", g.rnd.IntN(1<<24))
	case strings.Contains(key, "country"):
		if f.MaxLength == 2 {
			return g.pick(countryCodes)
		}
		return g.pick(countries)
	case strings.Contains(key, "city"):
		return g.pick(cities)
	case strings.Contains(key, "region") || strings.Contains(key, "state"):
		return g.pick(regions)
	case strings.Contains(key, "postal") || strings.Contains(key, "zip"):
		return fmt.Sprintf("%05d", g.rnd.IntN(100000))
	case strings.Contains(key, "street") || strings.Contains(key, "address"):
		return fmt.Sprintf("%d %s", 1+g.rnd.IntN(999), g.pick(streets))
	case strings.Contains(key, "currency"):
		return g.pick([]string{"USD", "EUR", "GBP"})
	case strings.Contains(key, "timezone"):
		return g.pick([]string{"America/New_York", "Europe/London", "Europe/Berlin", "Asia/Tokyo", "America/Los_Angeles"})
	case strings.Contains(key, "locale"):
		return g.pick([]string{"en-US", "en-GB", "de-DE", "fr-FR", "ja-JP"})
	case strings.Contains(key, "sku") || key == "code" || strings.HasSuffix(key, "_code"):
		return fmt.Sprintf("%s-%04d", strings.ToUpper(r.Name[:min(3, len(r.Name))]), g.seq)
	case strings.Contains(key, "job_title") || key == "title" && r.Name == "contacts":
		return g.pick(jobTitles)
	case strings.Contains(key, "icon"):
		return g.pick([]string{"phone", "mail", "calendar", "video", "note", "flag"})
	case f.Type == model.Text || strings.Contains(key, "description") || strings.Contains(key, "notes") || strings.Contains(key, "summary") || strings.Contains(key, "plan") || strings.Contains(key, "criteria") || strings.Contains(key, "comment") || strings.Contains(key, "body") || strings.Contains(key, "quote"):
		return g.pick(sentences) + " " + g.pick(sentences)
	case key == "name" || key == "title" || key == "subject" || strings.HasSuffix(key, "_name") || strings.HasSuffix(key, "_label"):
		return g.title(r)
	}
	return g.pick(words) + " " + g.pick(words)
}

// title names a record the way people of that resource would.
func (g *Generator) title(r *model.Resource) string {
	if list, ok := vocabularies[r.Name]; ok {
		return list[g.rnd.IntN(len(list))] + suffix(g.seq, len(list))
	}
	switch r.Name {
	case "companies", "competitors", "locations":
		return g.pick(companyPrefixes) + " " + g.pick(companySuffixes) + suffix(g.seq, 800)
	case "deals":
		return g.pick(companyPrefixes) + " – " + g.pick(offerings) + " " + g.pick([]string{"renewal", "expansion", "pilot", "new business", "upgrade"})
	case "leads", "contacts", "entity_members":
		return g.pick(firstNames) + " " + g.pick(lastNames)
	case "projects":
		return g.pick(companyPrefixes) + " " + g.pick(offerings) + " rollout" + suffix(g.seq, 200)
	case "project_tasks", "activities":
		return g.pick(taskVerbs) + " " + g.pick(taskObjects)
	case "project_signals":
		return g.pick(risks)
	case "products":
		return g.pick(offerings) + " " + g.pick([]string{"Starter", "Pro", "Enterprise", "Add-on", "Bundle"}) + suffix(g.seq, 100)
	}
	return g.pick(words) + " " + g.pick(words) + suffix(g.seq, 50)
}

// suffix numbers repeated names once the list of names is used up.
func suffix(seq, listLen int) string {
	if seq <= listLen {
		return ""
	}
	return " " + strconv.Itoa(seq)
}

// fit trims s to the field's length bounds.
func fit(f *model.Field, s string) string {
	if f.MaxLength > 0 && utf8.RuneCountInString(s) > f.MaxLength {
		s = string([]rune(s)[:f.MaxLength])
	}
	for utf8.RuneCountInString(s) < f.MinLength {
		s += "x"
	}
	return s
}
