package httpapi

import "github.com/uptrace/bunrouter"

// adminHandlers are the handlers of the admin routes (route.Admin) by label; each area's file adds its
// own in an init function (handle). A route without one makes New panic.
var adminHandlers = map[string]func(*Handler) bunrouter.HandlerFunc{}

// handle registers the handler of the admin route labelled label.
func handle(label string, f func(*Handler) bunrouter.HandlerFunc) {
	if _, dup := adminHandlers[label]; dup {
		panic("httpapi: two handlers for admin route " + label)
	}
	adminHandlers[label] = f
}
