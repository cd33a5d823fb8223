package sample

var firstNames = []string{"Ada", "Amara", "Ben", "Carlos", "Chloe", "Dmitri", "Elena", "Farah", "Gabriel", "Hana", "Ibrahim", "Isla", "Jamal", "Jin", "Kofi", "Lena", "Liam", "Maya", "Mateo", "Nia", "Noah", "Olivia", "Omar", "Priya", "Quinn", "Rafael", "Rosa", "Sam", "Sofia", "Tariq", "Uma", "Victor", "Wei", "Yara", "Zoe", "Aiko", "Bruno", "Chen", "Diego", "Emma", "Felix", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Lucas", "Mila", "Nora", "Oscar"}

var lastNames = []string{"Adeyemi", "Andersson", "Bauer", "Brown", "Chen", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Gupta", "Hansen", "Ivanova", "Jones", "Kim", "Kowalski", "Lopez", "Martin", "Müller", "Nakamura", "Nguyen", "O'Brien", "Okafor", "Patel", "Quinn", "Rossi", "Santos", "Schmidt", "Silva", "Smith", "Tanaka", "Taylor", "Usman", "Virtanen", "Wang", "Williams", "Xu", "Yilmaz", "Zhang", "Novak"}

var companyPrefixes = []string{"Northwind", "Blue Harbor", "Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Cyberdyne", "Soylent", "Vandelay", "Hooli", "Pied Piper", "Tyrell", "Aperture", "Black Mesa", "Contoso", "Fabrikam", "Litware", "Proseware", "Adatum", "Tailspin", "Wingtip", "Lucerne", "Margie's", "Alpine", "Summit", "Redwood", "Silverline", "Brightpath", "Ironclad", "Evergreen", "Clearwater", "Granite", "Lighthouse", "Meridian", "Orbit", "Pinnacle", "Quantum", "Riverstone"}

var companySuffixes = []string{"Analytics", "Logistics", "Labs", "Systems", "Holdings", "Health", "Foods", "Energy", "Robotics", "Capital", "Media", "Software", "Partners", "Manufacturing", "Retail", "Consulting", "Security", "Networks", "Biotech", "Studios"}

var offerings = []string{"Analytics Platform", "Data Warehouse", "Field Service", "Payroll", "CRM Suite", "Support Desk", "Security Audit", "Cloud Migration", "Onboarding", "Training", "Integration", "Mobile App"}

var taskVerbs = []string{"Draft", "Review", "Prepare", "Schedule", "Finalize", "Kick off", "Follow up on", "Estimate", "Test", "Document"}

var taskObjects = []string{"statement of work", "integration plan", "stakeholder interviews", "data migration", "UAT sign-off", "pricing proposal", "security questionnaire", "go-live checklist", "weekly status report", "training sessions"}

var risks = []string{"Key stakeholder leaving", "Vendor API rate limits", "Data quality below threshold", "Scope creep on reporting", "Budget approval delayed", "Legacy system outage", "Compliance review pending", "Resource conflict with Q3 launch"}

var jobTitles = []string{"Head of Operations", "VP Sales", "Chief Financial Officer", "IT Director", "Procurement Manager", "Marketing Lead", "Account Executive", "Project Manager", "Solutions Engineer", "Office Manager"}

var cities = []string{"Berlin", "Boston", "Chicago", "Dublin", "Lisbon", "London", "Madrid", "Melbourne", "Munich", "New York", "Osaka", "Paris", "San Francisco", "Seattle", "Singapore", "Stockholm", "Toronto", "Zurich"}

var regions = []string{"California", "Bavaria", "Ontario", "Île-de-France", "New York", "Texas", "Victoria", "Catalonia", "Kanto", "Ontario"}

var countryCodes = []string{"US", "GB", "DE", "FR", "ES", "PT", "IE", "CA", "AU", "JP", "SG", "SE", "CH", "NL"}

var countries = []string{"United States", "United Kingdom", "Germany", "France", "Spain", "Canada", "Australia", "Japan", "Singapore", "Sweden"}

var streets = []string{"Market Street", "Harbor Road", "Main Street", "King Street", "Elm Avenue", "Station Road", "Park Lane", "Queen Street", "Mill Road", "Bridge Street"}

var words = []string{"quarterly", "regional", "strategic", "annual", "priority", "standard", "premium", "core", "partner", "global", "internal", "customer"}

var sentences = []string{
	"Discussed the renewal timeline and next steps with the buying committee.",
	"The customer wants a phased rollout starting with the EMEA team.",
	"Pricing was accepted pending legal review of the master agreement.",
	"Integration with the existing ERP is the main technical risk.",
	"Follow-up meeting booked with the finance lead next week.",
	"Security questionnaire returned with two open items.",
	"Champion is strongly in favour; procurement needs three quotes.",
	"Pilot results exceeded the agreed success criteria.",
	"Budget is approved for this fiscal year only.",
	"Requested a reference call with a customer in the same industry.",
}

// vocabularies are realistic names for the vocabulary resources.
var vocabularies = map[string][]string{
	"pipelines":                     {"New Business", "Renewals", "Partner Deals", "Enterprise", "SMB"},
	"pipeline_stages":               {"Qualification", "Discovery", "Demo", "Proposal", "Negotiation", "Closed Won", "Closed Lost"},
	"product_categories":            {"Software", "Services", "Hardware", "Support", "Training"},
	"tax_classes":                   {"Standard", "Reduced", "Zero-rated", "Exempt", "Digital services"},
	"loss_reasons":                  {"Price too high", "Chose competitor", "No budget", "No decision", "Missing feature", "Timing"},
	"deal_sources":                  {"Inbound web", "Referral", "Trade show", "Outbound", "Partner", "Webinar"},
	"deal_role_types":               {"Decision maker", "Champion", "Influencer", "Economic buyer", "Technical evaluator", "Blocker"},
	"forecast_categories":           {"Pipeline", "Best case", "Commit", "Closed", "Omitted"},
	"lead_disqualification_reasons": {"No budget", "Wrong contact", "Student or job seeker", "Competitor", "Duplicate", "No response"},
	"tags":                          {"VIP", "Strategic", "At risk", "Upsell", "Partner", "Churn risk", "Beta"},
	"activity_type_definitions":     {"Call", "Meeting", "Email", "Task", "Demo", "Lunch"},
	"activity_outcome_definitions":  {"Connected", "Left voicemail", "No answer", "Meeting booked", "Not interested"},
	"activity_templates":            {"Discovery call", "Follow-up email", "Quarterly review", "Onboarding kickoff", "Renewal check-in"},
	"entity_departments":            {"Sales", "Marketing", "Customer Success", "Delivery", "Finance", "Engineering"},
	"entity_job_titles":             {"Account Executive", "Sales Manager", "Project Manager", "Consultant", "Solutions Architect", "Customer Success Manager"},
	"dashboards":                    {"Sales overview", "Pipeline health", "Delivery status", "Team activity", "Forecast"},
	"automations":                   {"Assign new leads", "Notify on won deal", "Create onboarding project", "Escalate overdue tasks", "Weekly digest"},
	"project_statuses":              {"Not started", "Active", "On hold", "Completed", "Cancelled"},
	"project_task_statuses":         {"To do", "In progress", "In review", "Done", "Cancelled"},
	"project_task_types":            {"Task", "Milestone", "Bug", "Meeting", "Review"},
	"project_role_types":            {"Project manager", "Consultant", "Developer", "Designer", "Sponsor"},
	"project_task_role_types":       {"Responsible", "Accountable", "Consulted", "Informed"},
	"deliverable_statuses":          {"Draft", "In review", "Approved", "Rejected", "Delivered"},
	"signal_statuses":               {"Open", "Mitigating", "Resolved", "Closed"},
	"signal_types":                  {"Risk", "Issue", "Assumption", "Dependency", "Change request"},
	"signal_severities":             {"Low", "Medium", "High", "Critical"},
	"signal_probabilities":          {"Rare", "Unlikely", "Possible", "Likely", "Almost certain"},
	"project_approvals":             {"Design sign-off", "Budget approval", "Go-live approval", "Change approval"},
	"scope_documents":               {"Statement of work", "Scope addendum", "Technical scope", "Implementation plan"},
	"testimonials":                  {"Customer story", "Case study quote", "Review", "Reference"},
	"data_model_records":            {"Vendor", "Partner", "Supplier", "Contractor"},
}
