package route

// ConsoleFiles are the web console's assets (docs/issue-24.md, "Console"), served at /console/{name} from
// the files embedded in runtime/httpapi/console; index.html is also the page at /console and /console/.
// A test in httpapi checks that this list and the embedded files agree.
var ConsoleFiles = []string{
	"index.html", "app.css", "app.js", "api.js", "ui.js",
	"catalog.js", "fields.js", "models.js", "members.js", "keys.js", "usage.js", "audit.js", "webhooks.js", "jobs.js",
}

// consoleRoutes serve the console's page and assets: not part of the API's contract (Documented false),
// no key (the page signs in with a one-time link and a session cookie).
var consoleRoutes = func() []Route {
	out := []Route{
		{Method: "GET", Path: "/console", Endpoint: ConsolePage, Label: "console"},
		{Method: "GET", Path: "/console/", Endpoint: ConsolePage, Label: "console"},
	}
	for _, name := range ConsoleFiles {
		if name != "index.html" {
			out = append(out, Route{Method: "GET", Path: "/console/" + name, Endpoint: ConsoleAsset, Label: "console"})
		}
	}
	return out
}()
