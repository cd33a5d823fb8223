package sample

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/workspace-records/records/engine/model"
)

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
