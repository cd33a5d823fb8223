package sample

// Word lists the generator draws from. They are read-only: nothing in this package writes to them.

var firstNames = []string{
	"Olivia", "Liam", "Amara", "Mateo", "Priya", "Hiroshi", "Sofia", "Kwame", "Chen", "Fatima",
	"Lucas", "Ingrid", "Diego", "Aisha", "Noah", "Mei", "Oluwaseun", "Elena", "Rahul", "Zoë",
	"Jonas", "Yuki", "Carlos", "Leila", "Ethan", "Hana", "Tomasz", "Nia", "Arjun", "Camila",
	"Emeka", "Freya", "Omar", "Grace", "Santiago", "Anika", "Malik", "Isabella", "Wei", "Sven",
	"Chloé", "Kofi", "Lars", "Ana", "Dmitri", "Maya", "Jamal", "Ximena", "Ravi", "Astrid",
	"Tariq", "Julia", "Kenji", "Lucía", "Samuel", "Nadia", "José", "Ayumi", "Benjamin", "Zainab",
	"Björn", "Renée",
}

var lastNames = []string{
	"Smith", "Okafor", "García", "Nakamura", "Patel", "Müller", "Johansson", "Kim", "Nguyen", "Rossi",
	"Kowalski", "Haddad", "Silva", "O'Brien", "Dubois", "Chen", "Schmidt", "Mensah", "Hernández", "Ivanova",
	"Andersson", "Tanaka", "Singh", "Cohen", "Murphy", "Fernández", "Larsen", "Wang", "Adeyemi", "Costa",
	"Novak", "Brown", "Wilson", "Khan", "Lopez", "Martin", "Yamamoto", "Dimitrov", "Jensen", "Moreau",
	"Rahman", "Sato", "Byrne", "Ali", "Kumar", "Walker", "Bianchi", "Petrov", "Park", "Hughes",
	"Santos", "Lindqvist", "Mahlangu", "Reyes", "Becker", "Taylor", "Baptiste", "Eriksen", "Fischer", "van der Berg",
}

var companyPrefixes = []string{
	"Northwind", "Blue Harbor", "Silverline", "Redwood", "Brightpath", "Ironclad", "Summit", "Cedar Point",
	"Lumen", "Atlas", "Harborview", "Crescent", "Evergreen", "Granite", "Quantum", "Meridian",
	"Pinecrest", "Starling", "Oakridge", "Vertex", "Bluebird", "Copperfield", "Riverstone", "Skyline",
	"Tidewater", "Keystone", "Horizon", "Falcon", "Maple Leaf", "Aurora", "Sterling", "Westbrook",
	"Cobalt", "Juniper", "Beacon", "Highland", "Nimbus", "Orchard", "Polaris", "Sandstone",
}

var companySuffixes = []string{
	"Analytics", "Logistics", "Systems", "Labs", "Partners", "Health", "Capital", "Foods", "Energy", "Software",
	"Robotics", "Media", "Manufacturing", "Consulting", "Networks", "Outfitters", "Bio", "Logic", "Freight", "Studios",
}

var legalForms = []string{"Inc.", "LLC", "Ltd", "GmbH", "Group", "Holdings", "Co.", "AG", "SA", "BV"}

var tlds = []string{"com", "com", "com", "io", "co", "net", "de", "co.uk", "com.au", "ai"}

var productNames = []string{
	"Analytics Platform", "CRM Suite", "Data Connector", "Implementation Services", "Premium Support",
	"Training Workshop", "Cloud Storage Add-on", "API Access", "Mobile App License", "Security Audit",
	"Onboarding Package", "Managed Hosting", "Reporting Module", "Workflow Automation", "Integration Hub",
	"Customer Portal", "Forecasting Add-on", "Consulting Day", "SSO & Audit Log Add-on", "Data Migration Service",
}

var productTiers = []string{"Starter", "Professional", "Business", "Enterprise"}

var dealKinds = []string{"renewal", "expansion", "pilot", "new licence", "upgrade", "multi-year agreement", "proof of concept"}

var projectKinds = []string{
	"CRM implementation", "Data migration", "Sales ops rollout", "Analytics dashboard build", "ERP integration",
	"Customer portal launch", "Process optimisation", "Security audit", "Training programme", "Platform upgrade",
}

var jobTitles = []string{
	"Head of Sales", "VP Marketing", "Chief Technology Officer", "Operations Manager", "Procurement Lead",
	"IT Director", "Chief Financial Officer", "Customer Success Lead", "Product Manager", "Founder & CEO",
	"Sales Operations Analyst", "Head of Partnerships", "Data Engineer", "Office Manager",
	"Director of Engineering", "Marketing Coordinator", "Chief Operating Officer", "Head of Customer Experience",
}

var memberRoles = []string{
	"Sales rep", "Sales manager", "Admin", "Account manager", "Project manager", "Consultant",
	"Support agent", "Marketing specialist", "Solutions engineer",
}

var colors = []string{
	"#EF4444", "#F97316", "#F59E0B", "#EAB308", "#84CC16", "#22C55E", "#10B981", "#14B8A6",
	"#06B6D4", "#0EA5E9", "#3B82F6", "#6366F1", "#8B5CF6", "#A855F7", "#D946EF", "#EC4899",
	"#F43F5E", "#64748B", "#1F2937", "#0F766E",
}

var icons = []string{
	"phone", "mail", "calendar", "video", "check-square", "file-text", "flag", "alert-triangle",
	"star", "users", "briefcase", "clipboard", "code", "bug", "book", "map-pin",
}

var unitsOfMeasure = []string{"seat", "licence", "hour", "day", "user/month", "unit", "GB", "project"}

var versionLabels = []string{"v0.9", "v1.0", "v1.1", "v1.2", "v2.0", "Draft 2", "Draft 3", "Final"}

var cronSchedules = []string{"0 9 * * 1", "0 8 * * *", "*/30 * * * *", "0 18 * * 5", "0 7 1 * *", "15 6 * * 1-5"}

var triggerResources = []string{"deals", "contacts", "companies", "leads", "activities", "projects", "project_tasks"}

var triggerFields = []string{"status", "stage_id", "amount", "owner_id", "due_date", "lifecycle_stage", "priority"}

var departmentCodes = []string{"SAL", "MKT", "CS", "ENG", "PRD", "FIN", "HR", "OPS", "LEG", "PS", "SUP", "IT"}

var nextSteps = []string{
	"Send revised proposal", "Schedule demo with the IT team", "Wait for legal review", "Book follow-up call",
	"Confirm budget with the CFO", "Prepare pricing options", "Share security questionnaire answers",
	"Introduce solutions engineer", "Agree on pilot success criteria", "Send contract for signature",
}

var meetingPlaces = []string{
	"Zoom", "Microsoft Teams", "Google Meet", "Phone", "Client office – {city}", "Our office – {city}",
	"Café near {company} HQ", "{company}, {city}",
}

var subjectTemplates = []string{
	"Follow-up: {{deal.name}}", "Intro call with {{contact.first_name}}", "{{company.name}} – quarterly review",
	"Demo for {{company.name}}", "Next steps after our call", "Renewal of {{deal.name}}",
}

type city struct {
	Name, Region, Country, CountryName string
	Postal                             string // '#' a digit, '@' a letter
	TZ, Locale                         string
	Lat, Lon                           float64
	Phone                              string // '#' a digit
	Streets                            []string
	NumberFirst                        bool
}

var cities = []city{
	{"San Francisco", "California", "US", "United States", "941##", "America/Los_Angeles", "en-US", 37.77, -122.42, "+1 415-555-01##", []string{"Market Street", "Mission Street", "Folsom Street"}, true},
	{"New York", "New York", "US", "United States", "100##", "America/New_York", "en-US", 40.71, -74.01, "+1 212-555-01##", []string{"Broadway", "Madison Avenue", "Hudson Street"}, true},
	{"Chicago", "Illinois", "US", "United States", "606##", "America/Chicago", "en-US", 41.88, -87.63, "+1 312-555-01##", []string{"Michigan Avenue", "Wacker Drive", "Clark Street"}, true},
	{"Austin", "Texas", "US", "United States", "787##", "America/Chicago", "en-US", 30.27, -97.74, "+1 512-555-01##", []string{"Congress Avenue", "Lamar Boulevard", "6th Street"}, true},
	{"Seattle", "Washington", "US", "United States", "981##", "America/Los_Angeles", "en-US", 47.61, -122.33, "+1 206-555-01##", []string{"Pike Street", "1st Avenue", "Westlake Avenue"}, true},
	{"Boston", "Massachusetts", "US", "United States", "021##", "America/New_York", "en-US", 42.36, -71.06, "+1 617-555-01##", []string{"Boylston Street", "Summer Street", "Atlantic Avenue"}, true},
	{"Toronto", "Ontario", "CA", "Canada", "M5V #@#", "America/Toronto", "en-CA", 43.65, -79.38, "+1 416-555-01##", []string{"King Street West", "Queen Street East", "Bay Street"}, true},
	{"Vancouver", "British Columbia", "CA", "Canada", "V6B #@#", "America/Vancouver", "en-CA", 49.28, -123.12, "+1 604-555-01##", []string{"Granville Street", "Hastings Street", "Robson Street"}, true},
	{"London", "England", "GB", "United Kingdom", "EC#A #@@", "Europe/London", "en-GB", 51.51, -0.13, "+44 20 7946 0###", []string{"Old Street", "Shoreditch High Street", "Baker Street"}, true},
	{"Manchester", "England", "GB", "United Kingdom", "M# #@@", "Europe/London", "en-GB", 53.48, -2.24, "+44 161 496 0###", []string{"Deansgate", "Oxford Road", "Portland Street"}, true},
	{"Dublin", "Leinster", "IE", "Ireland", "D0# @###", "Europe/Dublin", "en-IE", 53.35, -6.26, "+353 1 555 ####", []string{"Grafton Street", "Baggot Street", "Pearse Street"}, true},
	{"Berlin", "Berlin", "DE", "Germany", "10###", "Europe/Berlin", "de-DE", 52.52, 13.40, "+49 30 5555 ####", []string{"Friedrichstraße", "Torstraße", "Kurfürstendamm"}, false},
	{"Munich", "Bavaria", "DE", "Germany", "80###", "Europe/Berlin", "de-DE", 48.14, 11.58, "+49 89 5555 ####", []string{"Leopoldstraße", "Maximilianstraße", "Sonnenstraße"}, false},
	{"Paris", "Île-de-France", "FR", "France", "750##", "Europe/Paris", "fr-FR", 48.86, 2.35, "+33 1 55 55 ## ##", []string{"rue de Rivoli", "boulevard Haussmann", "rue du Faubourg Saint-Antoine"}, true},
	{"Amsterdam", "North Holland", "NL", "Netherlands", "10## @@", "Europe/Amsterdam", "nl-NL", 52.37, 4.90, "+31 20 555 ####", []string{"Herengracht", "Keizersgracht", "Damrak"}, false},
	{"Madrid", "Community of Madrid", "ES", "Spain", "280##", "Europe/Madrid", "es-ES", 40.42, -3.70, "+34 91 555 ## ##", []string{"Calle de Alcalá", "Gran Vía", "Paseo de la Castellana"}, false},
	{"Stockholm", "Stockholm County", "SE", "Sweden", "111 ##", "Europe/Stockholm", "sv-SE", 59.33, 18.07, "+46 8 555 ### ##", []string{"Drottninggatan", "Birger Jarlsgatan", "Sveavägen"}, false},
	{"Zurich", "Zurich", "CH", "Switzerland", "80##", "Europe/Zurich", "de-CH", 47.38, 8.54, "+41 44 555 ## ##", []string{"Bahnhofstrasse", "Limmatquai", "Seefeldstrasse"}, false},
	{"Copenhagen", "Capital Region", "DK", "Denmark", "1###", "Europe/Copenhagen", "da-DK", 55.68, 12.57, "+45 33 55 ## ##", []string{"Strøget", "Vesterbrogade", "Nørrebrogade"}, false},
	{"Warsaw", "Masovia", "PL", "Poland", "00-###", "Europe/Warsaw", "pl-PL", 52.23, 21.01, "+48 22 555 ## ##", []string{"ulica Marszałkowska", "ulica Prosta", "Aleje Jerozolimskie"}, false},
	{"Sydney", "New South Wales", "AU", "Australia", "20##", "Australia/Sydney", "en-AU", -33.87, 151.21, "+61 2 5550 ####", []string{"George Street", "Pitt Street", "Kent Street"}, true},
	{"Melbourne", "Victoria", "AU", "Australia", "30##", "Australia/Melbourne", "en-AU", -37.81, 144.96, "+61 3 5550 ####", []string{"Collins Street", "Flinders Lane", "Bourke Street"}, true},
	{"Tokyo", "Tokyo", "JP", "Japan", "1##-####", "Asia/Tokyo", "ja-JP", 35.68, 139.69, "+81 3-5555-####", []string{"Chiyoda", "Minato", "Shibuya"}, false},
	{"Singapore", "Singapore", "SG", "Singapore", "0#####", "Asia/Singapore", "en-SG", 1.35, 103.82, "+65 6555 ####", []string{"Raffles Place", "Orchard Road", "Anson Road"}, true},
	{"São Paulo", "São Paulo", "BR", "Brazil", "01###-###", "America/Sao_Paulo", "pt-BR", -23.55, -46.63, "+55 11 5555-####", []string{"Avenida Paulista", "Rua Augusta", "Rua Oscar Freire"}, false},
	{"Mexico City", "Ciudad de México", "MX", "Mexico", "06###", "America/Mexico_City", "es-MX", 19.43, -99.13, "+52 55 5555 ####", []string{"Paseo de la Reforma", "Avenida Insurgentes Sur", "Calle Madero"}, false},
	{"Bengaluru", "Karnataka", "IN", "India", "560 0##", "Asia/Kolkata", "en-IN", 12.97, 77.59, "+91 80 5555 ####", []string{"MG Road", "Residency Road", "Brigade Road"}, true},
	{"Cape Town", "Western Cape", "ZA", "South Africa", "80##", "Africa/Johannesburg", "en-ZA", -33.92, 18.42, "+27 21 555 ####", []string{"Long Street", "Bree Street", "Loop Street"}, true},
	{"Lagos", "Lagos", "NG", "Nigeria", "1012##", "Africa/Lagos", "en-NG", 6.52, 3.38, "+234 1 555 ####", []string{"Adeola Odeku Street", "Broad Street", "Awolowo Road"}, true},
	{"Nairobi", "Nairobi County", "KE", "Kenya", "00###", "Africa/Nairobi", "en-KE", -1.29, 36.82, "+254 20 555 ####", []string{"Kenyatta Avenue", "Moi Avenue", "Waiyaki Way"}, true},
}

// vocab is one sensible value of a vocabulary resource: its name and, optionally, values for other
// fields of the same record ("key=value" pairs separated by spaces; used only when they validate).
type vocab struct {
	Name  string
	Attrs string
}

var vocabularies = map[string][]vocab{
	"activity_outcome_definitions": {
		{"Connected", "outcome_type=positive"}, {"Meeting booked", "outcome_type=positive"},
		{"Left voicemail", "outcome_type=neutral"}, {"No answer", "outcome_type=neutral"},
		{"Not interested", "outcome_type=negative"}, {"Follow-up required", "outcome_type=neutral"},
		{"Completed successfully", "outcome_type=positive"}, {"Rescheduled", "outcome_type=neutral"},
		{"Wrong number", "outcome_type=negative"}, {"Email bounced", "outcome_type=negative"},
	},
	"activity_templates": {
		{"Discovery call", "default_duration_minutes=30"}, {"Product demo", "default_duration_minutes=60"},
		{"Follow-up email", "default_duration_minutes=15"}, {"Quarterly business review", "default_duration_minutes=90"},
		{"Contract negotiation", "default_duration_minutes=60"}, {"Onboarding kickoff", "default_duration_minutes=60"},
		{"Renewal check-in", "default_duration_minutes=30"}, {"Executive briefing", "default_duration_minutes=45"},
		{"Technical deep dive", "default_duration_minutes=90"}, {"Pricing discussion", "default_duration_minutes=30"},
	},
	"activity_type_definitions": {
		{"Call", "icon=phone is_call=true is_meeting=false default_duration_minutes=15"},
		{"Email", "icon=mail is_call=false is_meeting=false default_duration_minutes=5"},
		{"Meeting", "icon=calendar is_meeting=true is_call=false default_duration_minutes=60"},
		{"Video call", "icon=video is_meeting=true is_call=false default_duration_minutes=30"},
		{"Task", "icon=check-square is_call=false is_meeting=false"},
		{"Lunch", "icon=coffee is_meeting=true is_call=false default_duration_minutes=90"},
		{"Demo", "icon=presentation is_meeting=true is_call=false default_duration_minutes=60"},
		{"Note", "icon=file-text is_call=false is_meeting=false default_duration_minutes=0"},
		{"LinkedIn message", "icon=linkedin is_call=false is_meeting=false default_duration_minutes=5"},
		{"Site visit", "icon=map-pin is_meeting=true is_call=false default_duration_minutes=120"},
	},
	"deal_role_types": {
		{"Decision maker", "is_decision_maker=true"}, {"Economic buyer", "is_decision_maker=true"},
		{"Champion", "is_decision_maker=false"}, {"Influencer", "is_decision_maker=false"},
		{"Technical evaluator", "is_decision_maker=false"}, {"End user", "is_decision_maker=false"},
		{"Legal reviewer", "is_decision_maker=false"}, {"Procurement", "is_decision_maker=false"},
		{"Executive sponsor", "is_decision_maker=true"}, {"Blocker", "is_decision_maker=false"},
	},
	"deal_sources": {
		{"Inbound web", "channel=inbound"}, {"Referral", "channel=referral"}, {"Trade show", "channel=event"},
		{"Outbound prospecting", "channel=outbound"}, {"Partner referral", "channel=partner"},
		{"Webinar", "channel=event"}, {"Paid search", "channel=paid_marketing"}, {"Organic search", "channel=organic"},
		{"LinkedIn ads", "channel=paid_marketing"}, {"Existing customer", "channel=other"},
		{"Cold email", "channel=outbound"}, {"Conference", "channel=event"},
	},
	"deliverable_statuses": {
		{"Draft", "category=draft is_final=false"}, {"In review", "category=in_review is_final=false"},
		{"Awaiting client feedback", "category=in_review is_final=false"}, {"Changes requested", "category=rejected is_final=false"},
		{"Approved", "category=approved is_final=false"}, {"Rejected", "category=rejected is_final=true"},
		{"Delivered", "category=delivered is_final=true"},
	},
	"entity_departments": {
		{"Sales", "code=SAL"}, {"Marketing", "code=MKT"}, {"Customer Success", "code=CS"}, {"Engineering", "code=ENG"},
		{"Product", "code=PRD"}, {"Finance", "code=FIN"}, {"Human Resources", "code=HR"}, {"Operations", "code=OPS"},
		{"Legal", "code=LEG"}, {"Professional Services", "code=PS"}, {"Support", "code=SUP"}, {"IT", "code=IT"},
	},
	"entity_job_titles": {
		{"Account Executive", "seniority_level=3"}, {"Sales Development Representative", "seniority_level=1"},
		{"Sales Manager", "seniority_level=5"}, {"VP of Sales", "seniority_level=8"},
		{"Customer Success Manager", "seniority_level=4"}, {"Solutions Engineer", "seniority_level=4"},
		{"Project Manager", "seniority_level=5"}, {"Marketing Manager", "seniority_level=5"},
		{"Chief Executive Officer", "seniority_level=10"}, {"Software Engineer", "seniority_level=3"},
		{"Senior Consultant", "seniority_level=5"}, {"Operations Analyst", "seniority_level=2"},
		{"Head of Delivery", "seniority_level=7"}, {"Finance Director", "seniority_level=8"},
	},
	"forecast_categories": {
		{"Pipeline", "category=pipeline counts_toward_forecast=false"}, {"Best case", "category=best_case counts_toward_forecast=true"},
		{"Commit", "category=commit counts_toward_forecast=true"}, {"Closed", "category=closed counts_toward_forecast=true"},
		{"Omitted", "category=omitted counts_toward_forecast=false"},
	},
	"lead_disqualification_reasons": {
		{"No budget", "recycle_after_days=180"}, {"Not a decision maker", "recycle_after_days=90"}, {"Bad fit", ""},
		{"Duplicate lead", "requires_note=false"}, {"Unresponsive", "recycle_after_days=90"}, {"Chose a competitor", "recycle_after_days=365"},
		{"Student or job seeker", "requires_note=false"}, {"Company too small", "recycle_after_days=365"},
		{"Outside our sales territory", ""}, {"Already a customer", "requires_note=false"},
	},
	"loss_reasons": {
		{"Price too high", "category=price"}, {"Chose competitor", "category=competitor requires_note=true"},
		{"No budget", "category=no_budget"}, {"Bad timing", "category=timing"}, {"Missing features", "category=product_fit requires_note=true"},
		{"No decision made", "category=no_decision"}, {"Champion left the company", "category=relationship"},
		{"Built in-house instead", "category=other"}, {"Lost contact", "category=relationship"},
		{"Project cancelled", "category=no_decision"},
	},
	"pipeline_stages": {
		{"Qualification", "probability=10 stage_type=open"}, {"Discovery", "probability=20 stage_type=open"},
		{"Needs analysis", "probability=30 stage_type=open"}, {"Proposal", "probability=50 stage_type=open"},
		{"Negotiation", "probability=70 stage_type=open"}, {"Contract sent", "probability=85 stage_type=open"},
		{"Closed won", "probability=100 stage_type=won"}, {"Closed lost", "probability=0 stage_type=lost"},
	},
	"pipelines": {
		{"New business", ""}, {"Renewals", ""}, {"Upsell & cross-sell", ""}, {"Partner channel", ""},
		{"Enterprise", ""}, {"SMB", ""}, {"EMEA sales", ""}, {"Public sector", ""},
	},
	"product_categories": {
		{"Software licences", ""}, {"Subscriptions", ""}, {"Professional services", ""}, {"Training", ""},
		{"Support plans", ""}, {"Hardware", ""}, {"Add-ons", ""}, {"Consulting", ""},
	},
	"project_role_types": {
		{"Project manager", "default_hourly_rate=150 is_billable=true"}, {"Solution architect", "default_hourly_rate=190 is_billable=true"},
		{"Developer", "default_hourly_rate=140 is_billable=true"}, {"Business analyst", "default_hourly_rate=120 is_billable=true"},
		{"QA engineer", "default_hourly_rate=110 is_billable=true"}, {"Designer", "default_hourly_rate=125 is_billable=true"},
		{"Consultant", "default_hourly_rate=165 is_billable=true"}, {"Account manager", "is_billable=false"},
		{"Executive sponsor", "is_billable=false"}, {"Trainer", "default_hourly_rate=95 is_billable=true"},
	},
	"project_statuses": {
		{"Not started", "category=not_started is_closed=false"}, {"Planning", "category=not_started is_closed=false"},
		{"In progress", "category=active is_closed=false"}, {"At risk", "category=active is_closed=false"},
		{"On hold", "category=on_hold is_closed=false"}, {"Completed", "category=completed is_closed=true"},
		{"Cancelled", "category=cancelled is_closed=true"},
	},
	"project_task_role_types": {
		{"Responsible", "category=responsible"}, {"Accountable", "category=accountable"},
		{"Consulted", "category=consulted"}, {"Informed", "category=informed"},
		{"Reviewer", "category=consulted"}, {"Approver", "category=accountable"},
	},
	"project_task_statuses": {
		{"Backlog", "category=todo is_closed=false"}, {"To do", "category=todo is_closed=false"},
		{"In progress", "category=in_progress is_closed=false"}, {"Blocked", "category=in_progress is_closed=false"},
		{"In review", "category=in_progress is_closed=false"}, {"Done", "category=done is_closed=true"},
		{"Cancelled", "category=cancelled is_closed=true"},
	},
	"project_task_types": {
		{"Development", "icon=code is_billable=true"}, {"Design", "icon=pen-tool is_billable=true"},
		{"Testing", "icon=check-square is_billable=true"}, {"Documentation", "icon=book is_billable=true"},
		{"Meeting", "icon=users is_billable=false"}, {"Research", "icon=search is_billable=true"},
		{"Configuration", "icon=settings is_billable=true"}, {"Training", "icon=award is_billable=true"},
		{"Bug fix", "icon=bug is_billable=false"}, {"Data migration", "icon=database is_billable=true"},
	},
	"signal_probabilities": {
		{"Rare", "level=1 likelihood_percent=5 weight=1"}, {"Unlikely", "level=2 likelihood_percent=20 weight=2"},
		{"Possible", "level=3 likelihood_percent=50 weight=3"}, {"Likely", "level=4 likelihood_percent=75 weight=4"},
		{"Almost certain", "level=5 likelihood_percent=95 weight=5"},
	},
	"signal_severities": {
		{"Negligible", "level=1 weight=1"}, {"Minor", "level=2 weight=2"}, {"Moderate", "level=3 weight=3"},
		{"Major", "level=4 weight=5"}, {"Critical", "level=5 weight=8"},
	},
	"signal_statuses": {
		{"Open", "category=open is_closed=false"}, {"Under review", "category=open is_closed=false"},
		{"Mitigating", "category=mitigating is_closed=false"}, {"Monitoring", "category=mitigating is_closed=false"},
		{"Resolved", "category=resolved is_closed=true"}, {"Closed", "category=closed is_closed=true"},
		{"Accepted", "category=closed is_closed=true"},
	},
	"signal_types": {
		{"Risk", "category=risk icon=alert-triangle"}, {"Issue", "category=issue icon=alert-circle"},
		{"Assumption", "category=assumption icon=help-circle"}, {"Dependency", "category=dependency icon=link"},
		{"Change request", "category=change_request icon=edit"}, {"Scope creep", "category=change_request icon=maximize"},
		{"Resource constraint", "category=risk icon=users"}, {"Technical debt", "category=issue icon=tool"},
	},
	"tags": {
		{"VIP", ""}, {"Hot lead", ""}, {"Enterprise", ""}, {"Needs follow-up", ""}, {"Partner", ""},
		{"Churn risk", ""}, {"Upsell opportunity", ""}, {"Reference customer", ""}, {"Strategic", ""},
		{"Newsletter", ""}, {"Beta tester", ""}, {"Decision maker", ""},
	},
	"tax_classes": {
		{"Standard rate", "rate_percent=20 tax_code=VAT-STD"}, {"Reduced rate", "rate_percent=5 tax_code=VAT-RED"},
		{"Zero rated", "rate_percent=0 tax_code=VAT-ZERO"}, {"Exempt", "rate_percent=0 tax_code=EXEMPT"},
		{"Sales tax – California", "rate_percent=7.25 country=US tax_code=US-CA"},
		{"German VAT", "rate_percent=19 country=DE tax_code=DE-USt-19"},
		{"GST", "rate_percent=10 country=AU tax_code=AU-GST"}, {"HST Ontario", "rate_percent=13 country=CA tax_code=CA-ON-HST"},
	},
}

// Names of non-vocabulary resources whose records are named from a plain list.
var namedLists = map[string][]string{
	"dashboards": {
		"Sales pipeline overview", "Team performance", "Revenue forecast", "Marketing funnel", "Project health",
		"Customer success metrics", "Executive summary", "Activity leaderboard", "Win/loss analysis", "Delivery utilisation",
	},
	"automations": {
		"Assign new leads round-robin", "Notify owner when a deal is won", "Weekly pipeline digest", "Escalate overdue tasks",
		"Create onboarding project on win", "Remind owners about stale deals", "Welcome email for new contacts",
		"Flag high-severity signals",
	},
	"data_model_records": {
		"Customer segment model", "Lead scoring model", "Territory mapping", "Renewal risk model",
		"Account hierarchy", "Product usage rollup", "Capacity planning model",
	},
	"project_deliverables": {
		"Solution design document", "Data migration plan", "UAT sign-off report", "Training materials", "Go-live runbook",
		"Integration specification", "Project charter", "Final handover pack", "Requirements workshop summary",
		"Dashboard prototype",
	},
}

var locationKinds = []string{"office", "headquarters", "branch", "warehouse", "regional office", "store", "plant"}

// Titles and subjects. {first}, {last}, {company}, {product}, {project}, {city}, {deliverable} are filled in.
var titles = map[string][]string{
	"activities": {
		"Discovery call with {first}", "Demo of {product} for {company}", "Follow up on proposal", "Send pricing to {first}",
		"Quarterly business review with {company}", "Intro call – {company}", "Contract review with legal",
		"Check in on onboarding progress", "Renewal discussion with {company}", "Lunch with {first} {last}",
		"Technical deep dive on integrations", "Answer {first}'s security questions", "Schedule kickoff meeting",
		"Executive sponsor alignment", "Negotiate discount terms", "Share case study with {first}",
		"Onsite workshop at {company}", "Confirm budget and timeline", "Call back {first} about {product}", "Prepare SOW draft",
	},
	"project_tasks": {
		"Set up staging environment", "Configure single sign-on", "Migrate historical {company} data", "Draft test plan",
		"Run user acceptance testing", "Build sales dashboard", "Write integration spec for ERP", "Train admin users",
		"Review data model with client", "Fix import validation errors", "Prepare go-live checklist", "Document API endpoints",
		"Set up email templates", "Configure pipeline stages", "Clean up duplicate contacts", "Hold weekly status meeting",
		"Update project plan", "Load product catalogue", "Configure user roles and permissions", "Perform security review",
	},
	"project_signals": {
		"Key stakeholder unavailable during UAT", "Data quality issues in legacy CRM export",
		"Integration API rate limits lower than expected", "Scope change requested for reporting module",
		"Budget approval delayed", "SSO vendor dependency not confirmed", "Go-live date at risk",
		"Client resources reassigned to another project", "Performance issues in staging",
		"Client to provide test data by week 3", "Change request: additional custom fields",
		"Licensing terms still under negotiation",
	},
	"leads": {
		"{company} – {product} enquiry", "Demo request from {company}", "{first} {last} – pricing question",
		"Webinar attendee: {company}", "Trade show contact: {company}", "Free trial signup – {company}",
		"Referral: {company}", "{company} evaluating {product}",
	},
	"scope_documents": {
		"Statement of Work – {company} {project}", "Scope: {project} for {company}", "SOW {company} – phase 2",
		"Change order – {company} {project}",
	},
	"testimonials": {
		"Cut onboarding time in half", "Our team finally trusts the pipeline", "The best implementation partner we've had",
		"Reporting that actually saves time", "Set up in days, not months", "Support that answers within the hour",
		"A clear view of every project", "Forecasts we can rely on",
	},
	"project_approvals": {
		"Approve {deliverable}", "Sign-off: {deliverable}", "Budget change approval for {project}", "Go-live approval – {company}",
	},
	"": {
		"Review open items", "Prepare quarterly update", "Follow up with {company}", "Update account plan",
		"Plan next steps with {first}", "Check data quality",
	},
}

// Sentences for text fields, keyed by field key; "description:<resource>" keys specialise descriptions.
var sentences = map[string][]string{
	"description:companies": {
		"Mid-market customer with strong growth in {city}.", "Evaluating a move away from spreadsheets for pipeline tracking.",
		"Long-standing account; renewal handled by the regional team.", "Procurement requires three quotes for anything over 50k.",
		"Expanding into new markets next year and hiring sales staff.", "Introduced through a partner at a trade show.",
	},
	"description:contacts": {
		"Met at the {city} customer conference.", "Prefers email over phone calls.", "Key champion for the {product} rollout.",
		"Reports to the CFO and owns the tooling budget.", "Asked to be kept in the loop on product updates.",
		"Joined {company} last year from a competitor.",
	},
	"description:deals": {
		"Customer wants to consolidate three tools into one.", "Budget confirmed for this fiscal year.",
		"Legal review expected to take two weeks.", "Competing against an incumbent vendor.",
		"Pilot with one team before a company-wide rollout.", "Decision expected after the board meeting.",
	},
	"description:leads": {
		"Downloaded the pricing guide twice this week.", "Asked for a demo focused on reporting.",
		"Currently using spreadsheets to track deals.", "Team of about 20 sellers across two regions.",
		"Came in through the partner referral programme.",
	},
	"description:products": {
		"Billed per seat with a 12-month minimum term.", "Includes onboarding and standard support.",
		"Available as an add-on to any paid plan.", "Delivered remotely by our professional services team.",
		"Volume discounts apply above 100 units.",
	},
	"description:projects": {
		"Rollout of {product} for the sales and service teams.", "Phase one covers data migration and core configuration.",
		"Weekly status calls every Tuesday with the client team.", "Go-live planned before the start of next quarter.",
		"Includes training for administrators and end users.",
	},
	"description:project_tasks": {
		"Coordinate with the client IT team before starting.", "Blocked until credentials are provided.",
		"Use the checklist from the previous rollout.", "Estimate assumes the sandbox is available.",
		"Document decisions in the project wiki.",
	},
	"description:*": {
		"Used across all teams in the workspace.", "Reviewed every quarter by the operations team.",
		"Keep this list short so reports stay readable.", "Added after the last sales process review.",
		"Applies to new records only.", "Agreed with team leads in the last planning session.",
	},
	"notes": {
		"Discussed current process and main pain points.", "{first} will loop in the IT lead next week.",
		"Sent the deck and a short recap afterwards.", "They want pricing for 50 and 100 seats.",
		"Follow-up scheduled for next Thursday.", "Concerns about data migration effort were raised.",
		"Good energy on the call; strong interest in {product}.",
	},
	"strengths": {
		"Strong brand recognition in the enterprise segment.", "Large partner ecosystem.", "Aggressive discounting at quarter end.",
		"Mature reporting features.", "Good mobile apps.",
	},
	"weaknesses": {
		"Complex setup that usually needs consultants.", "Slow support response times.", "Limited API and integration options.",
		"Steep price increases at renewal.", "Dated user interface.",
	},
	"pricing_notes": {
		"List price around 80 per user per month.", "Offers 20% off for multi-year commitments.",
		"Charges separately for sandbox environments.", "Implementation fees often exceed the first-year licence.",
	},
	"impact_summary": {
		"Could delay go-live by two to three weeks.", "Affects data quality in the reporting module.",
		"Additional effort of roughly 40 hours.", "Client satisfaction at risk if not addressed.",
		"Budget overrun of about 10% if the change is accepted.",
	},
	"mitigation_plan": {
		"Escalate to the executive sponsor in the next steering meeting.", "Add a second developer for two sprints.",
		"Agree on a reduced scope for the first release.", "Schedule daily check-ins until resolved.",
		"Prepare a fallback import using CSV files.",
	},
	"acceptance_criteria": {
		"All migrated records reconcile with the source system.", "Client project lead signs off in writing.",
		"No open critical defects.", "Training completed for all administrators.", "Dashboards load in under three seconds.",
	},
	"summary": {
		"Implementation of {product} for {company}.", "Covers configuration, data migration and training.",
		"Delivered over twelve weeks in three phases.", "Fixed fee with milestone-based invoicing.",
	},
	"in_scope": {
		"Configuration of pipelines, stages and fields.", "Migration of contacts, companies and open deals.",
		"Two training sessions for administrators.", "Integration with the client's email system.",
	},
	"out_of_scope": {
		"Custom development beyond standard configuration.", "Migration of archived records older than five years.",
		"Ongoing administration after go-live.", "Hardware or network changes.",
	},
	"assumptions": {
		"Client provides a project lead with decision authority.", "Source data is delivered as CSV exports.",
		"Sandbox access is available from week one.", "Feedback on deliverables within five working days.",
	},
	"comment": {
		"Looks good, approved.", "Please update the timeline section first.", "Approved with minor comments.",
		"Needs sign-off from finance as well.", "Rejected until the open defects are fixed.",
	},
	"quote": {
		"We finally have one place to see every deal and every project.", "Setup was quick and the team was always responsive.",
		"Our forecasts have never been this accurate.", "The rollout went smoothly and adoption was immediate.",
		"Reporting used to take a day each week; now it takes minutes.", "Great product and an even better team behind it.",
	},
	"body_template": {
		"Hi {{contact.first_name}},", "Thanks for your time today.", "As discussed, here are the next steps.",
		"Let me know if you have any questions.", "Best regards,",
	},
	"*": {
		"Reviewed with the team last week.", "Details to be confirmed with the client.", "See the shared folder for the latest version.",
		"Priority for this quarter.", "Owner to update after the next meeting.", "No further action needed for now.",
	},
}
