package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/workspace-records/records/runtime/admin"
	"slices"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/webhooks"
)

// The webhook commands manage a workspace's webhook endpoints (runtime/dispatch). An endpoint's secret
// is printed by webhook create and webhook rotate-secret, once, and by no other command: webhookEntry,
// which every other command prints, has no field for it.

const (
	webhookCreateUsage     = "webhook create --workspace W --member M --url URL [--description D] [--event-type T]... [--resource R]... [--disabled]"
	webhookListUsage       = "webhook list --workspace W"
	webhookUpdateUsage     = "webhook update --workspace W --endpoint ID [--url URL] [--description D] [--event-type T]... [--resource R]... [--all-event-types] [--all-resources] [--enable|--disable]"
	webhookRotateUsage     = "webhook rotate-secret --workspace W --endpoint ID [--overlap 24h]"
	webhookDeleteUsage     = "webhook delete --workspace W --endpoint ID"
	webhookDeliveriesUsage = "webhook deliveries --workspace W --endpoint ID [--state pending|delivered|failed|skipped] [--limit N]"
	webhookReplayUsage     = "webhook replay --workspace W --endpoint ID (--event EVENT_ID | --after SEQ)"
)

// webhookCreateHelp explains webhook create beyond its usage line.
const webhookCreateHelp = `Adds a webhook endpoint to a workspace. Deliveries are signed the Standard Webhooks way (webhook-id,
webhook-timestamp, webhook-signature) with the endpoint's secret, whsec_…, which this command prints
once: no other command shows it again (webhook rotate-secret makes a new one).

The endpoint receives the events of the types given with --event-type (companies.created,
deals.updated, …; repeat the flag or give a comma-separated list) about the resources given with
--resource; without them, every type and every resource. Each payload is the event as the member
given with --member (the endpoint's owner) may read it in the feed: their role, record rules and
masks apply.

Only http and https URLs are accepted, and not addresses in loopback, private, link-local or other
internal ranges unless the setting webhook_allow_private_addresses is on
(--webhook-allow-private-addresses, RECORDS_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true).`

// webhookDeliveriesHelp explains webhook deliveries beyond its usage line.
const webhookDeliveriesHelp = `Lists an endpoint's deliveries, newest first (by the event's sequence), each with its attempts: the
attempt's number, time, the receiver's HTTP status (- when none came), outcome, latency and error.
A pending delivery shows when its next attempt is due. Without --json the table has one row per
attempt (one row for a delivery not attempted yet).

States: pending (due, or being attempted), delivered (an attempt got a 2xx), failed (every attempt
of the retry schedule, about a day, failed: the endpoint was disabled), skipped (the endpoint's owner
may not read the event, or it left the feed: nothing was sent).`

// webhookReplayHelp explains webhook replay beyond its usage line.
const webhookReplayHelp = `Queues the events again for the endpoint, as new deliveries due now: one event (--event, its id in
the feed) or every event after a sequence (--after; 0 for every event the feed still holds, at most
10,000 at once) that the endpoint's event types and resources take. Receivers get the same webhook-id
as the first time. An event is in the feed once a server numbered it: at once for a write the server
made, at a running server's next sweep (every 2 s) for one of recordsctl records import, so imports
made while no server runs are not in the feed yet.`

// webhookEntry is an endpoint as the webhook commands print it: the admin API's shape, never with its
// secret.
type webhookEntry struct{ admin.Webhook }

func entryOf(ep dispatch.Endpoint) webhookEntry { return webhookEntry{admin.WebhookOf(ep)} }

func (w webhookEntry) state() string {
	switch {
	case w.Enabled:
		return "enabled"
	case w.DisabledReason != nil:
		return "disabled: " + *w.DisabledReason
	}
	return "disabled"
}

func allOr(list []string) string {
	if list == nil {
		return "all"
	}
	return orDash(strings.Join(list, ","))
}

// text is the endpoint in a few lines, for the commands that print one endpoint.
func (w webhookEntry) text() string {
	desc := ""
	if w.Description != "" {
		desc = fmt.Sprintf(" (%s)", w.Description)
	}
	return fmt.Sprintf("webhook endpoint %s%s\n  url: %s\n  event types: %s\n  resources: %s\n  owner: member %s\n  state: %s",
		w.ID, desc, w.URL, allOr(w.EventTypes), allOr(w.Resources), w.MemberID, w.state())
}

// listFlag is a flag that may be repeated, each value a comma-separated list.
type listFlag struct {
	values []string
	what   string // "an event type such as companies.created"
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }

func (l *listFlag) Set(v string) error {
	items := splitList(v)
	if len(items) == 0 {
		return fmt.Errorf("empty: want %s", l.what)
	}
	l.values = append(l.values, items...)
	return nil
}

func eventTypesFlag(fs *flag.FlagSet, usage string) *listFlag {
	l := &listFlag{what: "an event type such as companies.created"}
	fs.Var(l, "event-type", usage)
	return l
}

func resourcesFlag(fs *flag.FlagSet, usage string) *listFlag {
	l := &listFlag{what: "a resource such as companies"}
	fs.Var(l, "resource", usage)
	return l
}

// given reports which flags of fs were set on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// mustUUIDs checks that the flags given (name, value) hold UUIDs.
func mustUUIDs(flags ...[2]string) error {
	var errs []error
	for _, f := range flags {
		if f[1] != "" && !model.IsUUID(f[1]) {
			errs = append(errs, fmt.Errorf("--%s %q: must be a UUID", f[0], f[1]))
		}
	}
	return errors.Join(errs...)
}

// webhookFlags maps the fields of the registry's errors to the command's flags.
var webhookFlags = map[string]string{"url": "--url", "description": "--description", "event_types": "--event-type",
	"resources": "--resource", "member": "--member", "overlap": "--overlap"}

// webhookError words err of the registry for the command line: field errors name the flag (one a line),
// an unknown endpoint names its id. url is the --url given, to say when the setting would allow it.
func webhookError(err error, endpoint, url string, cfg config.Config) error {
	var list field.ErrorList
	switch {
	case errors.Is(err, dispatch.ErrNotFound):
		return fmt.Errorf("endpoint %s: %w", endpoint, err)
	case errors.As(err, &list):
		lines := make([]string, len(list))
		for i, fe := range list {
			name, _, _ := strings.Cut(fe.Field, "[")
			flagName := webhookFlags[name]
			if flagName == "" {
				flagName = fe.Field
			}
			lines[i] = flagName + ": " + fe.Message
			var refused *webhooks.RefusedAddressError
			if name == "url" && !cfg.WebhookAllowPrivate && errors.As(webhooks.ValidateURL(url, false), &refused) {
				lines[i] += " (the setting webhook_allow_private_addresses allows it: --webhook-allow-private-addresses or RECORDS_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true)"
			}
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	return err
}

func cmdWebhookCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	member := fs.String("member", "", "the member who owns the endpoint: payloads are what their role may read")
	url := fs.String("url", "", "http(s) URL the events are POSTed to")
	desc := fs.String("description", "", "what the endpoint is for (at most 500 characters)")
	types := eventTypesFlag(fs, "an event type to send, e.g. companies.created (repeatable or comma-separated; default: every type)")
	resources := resourcesFlag(fs, "a resource whose events to send (repeatable or comma-separated; default: every resource)")
	disabled := fs.Bool("disabled", false, "create the endpoint disabled (webhook update --enable turns it on)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, webhookCreateUsage), required("workspace", *ws), required("member", *member), required("url", *url)); err != nil {
			return err
		}
		if err := mustUUIDs([2]string{"workspace", *ws}, [2]string{"member", *member}); err != nil {
			return err
		}
		in := dispatch.Input{URL: url}
		set := given(fs)
		if set["description"] {
			in.Description = desc
		}
		if set["event-type"] {
			in.EventTypes = &types.values
		}
		if set["resource"] {
			in.Resources = &resources.values
		}
		if *disabled {
			in.Enabled = ptrBool(false)
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			wsID := strings.ToLower(*ws)
			if err := workspaceExists(b, e.ctx, wsID); err != nil {
				return err
			}
			ep, err := b.Webhooks.Create(e.ctx, wsID, strings.ToLower(*member), in)
			if err != nil {
				return webhookError(err, "", *url, cfg)
			}
			entry := entryOf(ep)
			return e.emit(struct {
				webhookEntry
				Secret string `json:"secret"`
			}{entry, ep.Secret}, entry.text()+"\nsecret (shown once, it cannot be shown again): "+ep.Secret)
		})
	}
}

func cmdWebhookList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, webhookListUsage), required("workspace", *ws)); err != nil {
			return err
		}
		if err := mustUUIDs([2]string{"workspace", *ws}); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			wsID := strings.ToLower(*ws)
			if err := workspaceExists(b, e.ctx, wsID); err != nil {
				return err
			}
			eps, err := b.Webhooks.List(e.ctx, wsID)
			if err != nil {
				return err
			}
			list := make([]webhookEntry, len(eps))
			rows := make([][]string, len(eps))
			for i, ep := range eps {
				list[i] = entryOf(ep)
				rows[i] = []string{ep.ID, ep.URL, allOr(ep.EventTypes), allOr(ep.Resources), list[i].state(), ep.Member, orDash(ep.Description), stamp(ep.CreatedAt)}
			}
			return e.emit(map[string]any{"data": list}, table("no webhook endpoints",
				[]string{"ID", "URL", "EVENT_TYPES", "RESOURCES", "STATE", "MEMBER", "DESCRIPTION", "CREATED_AT"}, rows))
		})
	}
}

func cmdWebhookUpdate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	id := fs.String("endpoint", "", "endpoint id")
	url := fs.String("url", "", "new http(s) URL")
	desc := fs.String("description", "", "new description")
	types := eventTypesFlag(fs, "send only these event types (repeatable or comma-separated; replaces the endpoint's list)")
	resources := resourcesFlag(fs, "send only the events of these resources (repeatable or comma-separated; replaces the endpoint's list)")
	allTypes := fs.Bool("all-event-types", false, "send every event type")
	allResources := fs.Bool("all-resources", false, "send the events of every resource")
	enable := fs.Bool("enable", false, "enable the endpoint (also one disabled after failing; its failed deliveries stay failed: webhook replay sends them again)")
	disable := fs.Bool("disable", false, "disable the endpoint: no new deliveries until it is enabled")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, webhookUpdateUsage), required("workspace", *ws), required("endpoint", *id)); err != nil {
			return err
		}
		set := given(fs)
		var conflicts []error
		for _, pair := range [][2]string{{"event-type", "all-event-types"}, {"resource", "all-resources"}, {"enable", "disable"}} {
			if set[pair[0]] && set[pair[1]] {
				conflicts = append(conflicts, suggest.Usage(fmt.Errorf("--%s and --%s exclude each other", pair[0], pair[1])))
			}
		}
		if err := errors.Join(conflicts...); err != nil {
			return err
		}
		var in dispatch.Input
		changes := 0
		if set["url"] {
			in.URL, changes = url, changes+1
		}
		if set["description"] {
			in.Description, changes = desc, changes+1
		}
		switch {
		case set["event-type"]:
			in.EventTypes, changes = &types.values, changes+1
		case *allTypes:
			in.EventTypes, changes = new([]string), changes+1
			*in.EventTypes = nil
		}
		switch {
		case set["resource"]:
			in.Resources, changes = &resources.values, changes+1
		case *allResources:
			in.Resources, changes = new([]string), changes+1
			*in.Resources = nil
		}
		switch {
		case *enable:
			in.Enabled, changes = ptrBool(true), changes+1
		case *disable:
			in.Enabled, changes = ptrBool(false), changes+1
		}
		if changes == 0 {
			return suggest.Usage(fmt.Errorf("nothing to change\nusage: recordsctl %s", webhookUpdateUsage))
		}
		if err := mustUUIDs([2]string{"workspace", *ws}); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			wsID := strings.ToLower(*ws)
			if err := workspaceExists(b, e.ctx, wsID); err != nil {
				return err
			}
			ep, err := b.Webhooks.Update(e.ctx, wsID, *id, in)
			if err != nil {
				return webhookError(err, *id, *url, cfg)
			}
			entry := entryOf(ep)
			return e.emit(entry, "updated "+entry.text())
		})
	}
}

func cmdWebhookRotateSecret(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	id := fs.String("endpoint", "", "endpoint id")
	overlap := fs.Duration("overlap", 24*time.Hour, "how long the old secret keeps signing beside the new one, at most 168h (0: it stops now)")
	return func(e *env, cfg config.Config, pos []string) error {
		return onEndpoint(e, cfg, pos, webhookRotateUsage, *ws, *id, func(b *server.Backend, wsID string) error {
			ep, err := b.Webhooks.RotateSecret(e.ctx, wsID, *id, *overlap)
			if err != nil {
				return webhookError(err, *id, "", cfg)
			}
			// The registry keeps the old secret until its update time plus the overlap.
			var until *time.Time
			old := "the old secret no longer signs"
			if *overlap > 0 {
				t := ep.UpdatedAt.Add(*overlap)
				until = &t
				old = "the old secret also signs until " + stamp(t)
			}
			return e.emit(struct {
				ID                  string     `json:"id"`
				Secret              string     `json:"secret"`
				PreviousSecretUntil *time.Time `json:"previous_secret_until"`
			}{ep.ID, ep.Secret, until},
				fmt.Sprintf("rotated the secret of webhook endpoint %s; %s\nsecret (shown once, it cannot be shown again): %s", ep.ID, old, ep.Secret))
		})
	}
}

func cmdWebhookDelete(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	id := fs.String("endpoint", "", "endpoint id")
	return func(e *env, cfg config.Config, pos []string) error {
		return onEndpoint(e, cfg, pos, webhookDeleteUsage, *ws, *id, func(b *server.Backend, wsID string) error {
			if err := b.Webhooks.Delete(e.ctx, wsID, *id); err != nil {
				return webhookError(err, *id, "", cfg)
			}
			return e.emit(map[string]any{"id": strings.ToLower(*id)}, "deleted webhook endpoint "+strings.ToLower(*id)+" and its delivery log")
		})
	}
}

// deliveryEntry is a delivery as webhook deliveries prints it: dispatch.Delivery with every attempt's
// error and response null when there is none, rather than left out, like every list's rows.
type deliveryEntry struct {
	dispatch.Delivery
	Attempts []attemptEntry `json:"attempts"`
}

type attemptEntry struct {
	dispatch.Attempt
	Error    *string `json:"error"`
	Response *string `json:"response"`
}

func deliveryEntryOf(d dispatch.Delivery) deliveryEntry {
	out := deliveryEntry{Delivery: d, Attempts: make([]attemptEntry, len(d.Attempts))}
	for i, a := range d.Attempts {
		out.Attempts[i] = attemptEntry{Attempt: a}
		if a.Error != "" {
			out.Attempts[i].Error = &d.Attempts[i].Error
		}
		if a.Response != "" {
			out.Attempts[i].Response = &d.Attempts[i].Response
		}
	}
	return out
}

var deliveryStates = []string{dispatch.StatePending, dispatch.StateDelivered, dispatch.StateFailed, dispatch.StateSkipped}

func cmdWebhookDeliveries(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	id := fs.String("endpoint", "", "endpoint id")
	state := fs.String("state", "", "only deliveries in this state: pending, delivered, failed or skipped")
	limit := fs.Int("limit", 50, "at most this many deliveries, newest first (1..1000)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, webhookDeliveriesUsage), required("workspace", *ws), required("endpoint", *id)); err != nil {
			return err
		}
		var errs []error
		if *state != "" && !slices.Contains(deliveryStates, *state) {
			errs = append(errs, errors.New(suggest.Unknown("state", *state, deliveryStates)))
		}
		if *limit < 1 || *limit > 1000 {
			errs = append(errs, fmt.Errorf("--limit %d: want 1 to 1000", *limit))
		}
		errs = append(errs, mustUUIDs([2]string{"workspace", *ws}))
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			wsID := strings.ToLower(*ws)
			if err := workspaceExists(b, e.ctx, wsID); err != nil {
				return err
			}
			list, err := b.Webhooks.Deliveries(e.ctx, wsID, *id, *state, *limit)
			if err != nil {
				return webhookError(err, *id, "", cfg)
			}
			entries := make([]deliveryEntry, len(list))
			var rows [][]string
			for i, d := range list {
				entries[i] = deliveryEntryOf(d)
				next := "-"
				if d.NextAttempt != nil {
					next = stamp(*d.NextAttempt)
				}
				head := []string{d.ID, fmt.Sprint(d.Sequence), d.EventID, d.State, next}
				if len(d.Attempts) == 0 {
					rows = append(rows, append(head, "-", "-", "-", "-", "-", "-"))
				}
				for _, a := range d.Attempts {
					status := "-"
					if a.Status != nil {
						status = fmt.Sprint(*a.Status)
					}
					rows = append(rows, append(head[:len(head):len(head)], fmt.Sprint(a.N), stamp(a.At), status, a.Outcome,
						fmt.Sprintf("%dms", a.LatencyMS), orDash(oneLine(a.Error, 120))))
				}
			}
			return e.emit(map[string]any{"data": entries}, table("no deliveries",
				[]string{"DELIVERY", "SEQ", "EVENT", "STATE", "NEXT_ATTEMPT_AT", "ATTEMPT", "AT", "STATUS", "OUTCOME", "LATENCY", "ERROR"}, rows))
		})
	}
}

// oneLine is s on one line, clipped to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func cmdWebhookReplay(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	id := fs.String("endpoint", "", "endpoint id")
	event := fs.String("event", "", "send this event again (its id in the feed)")
	after := fs.Int64("after", 0, "send every event after this sequence again (0: every event the feed holds)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, webhookReplayUsage), required("workspace", *ws), required("endpoint", *id)); err != nil {
			return err
		}
		set := given(fs)
		if set["event"] == set["after"] {
			return suggest.Usage(fmt.Errorf("give one of --event and --after\nusage: recordsctl %s", webhookReplayUsage))
		}
		if *after < 0 {
			return suggest.Usage(fmt.Errorf("--after %d: want a sequence, 0 or more", *after))
		}
		if err := mustUUIDs([2]string{"workspace", *ws}, [2]string{"event", *event}); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			wsID := strings.ToLower(*ws)
			if err := workspaceExists(b, e.ctx, wsID); err != nil {
				return err
			}
			n, err := b.Webhooks.Replay(e.ctx, wsID, *id, strings.ToLower(*event), *after)
			if err != nil {
				return webhookError(err, *id, "", cfg)
			}
			return e.emit(map[string]any{"id": strings.ToLower(*id), "queued": n},
				fmt.Sprintf("queued %d deliver%s to webhook endpoint %s", n, map[bool]string{true: "y", false: "ies"}[n == 1], strings.ToLower(*id)))
		})
	}
}

// onEndpoint runs fn for a command on one endpoint (flags --workspace and --endpoint, no positional
// arguments) once the workspace is known to exist.
func onEndpoint(e *env, cfg config.Config, pos []string, usage, ws, id string, fn func(b *server.Backend, wsID string) error) error {
	if err := errors.Join(need(pos, 0, usage), required("workspace", ws), required("endpoint", id)); err != nil {
		return err
	}
	if err := mustUUIDs([2]string{"workspace", ws}); err != nil {
		return err
	}
	return withBackend(e, cfg, func(b *server.Backend) error {
		wsID := strings.ToLower(ws)
		if err := workspaceExists(b, e.ctx, wsID); err != nil {
			return err
		}
		return fn(b, wsID)
	})
}
