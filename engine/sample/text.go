package sample

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/model"
)

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
