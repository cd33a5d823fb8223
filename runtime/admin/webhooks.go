package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/workspace-records/records/runtime/audit"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/store"
)

// The webhook operations are recordsctl webhook's (cmd/recordsctl/webhooks.go) over HTTP: the same
// dispatch.Registry calls, so the same validation (the SSRF-safe URL check included) and the same
// effect on every server; each write also writes its audit entry in its transaction. What a manager may
// do with an endpoint another member owns is webhookRules, which every operation consults.

// Webhook is an endpoint as the admin API (and recordsctl webhook) shows it: never with its secret, except Secret in the answers
// of create and rotate-secret.
type Webhook struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspace_id"`
	MemberID    string `json:"member_id"`
	URL         string `json:"url"`
	Description string `json:"description"`
	// EventTypes and Resources are null for every type and every resource.
	EventTypes     []string  `json:"event_types"`
	Resources      []string  `json:"resources"`
	Enabled        bool      `json:"enabled"`
	DisabledReason *string   `json:"disabled_reason"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// WebhookSecret is an endpoint with its signing secret, shown this once (create, rotate-secret).
type WebhookSecret struct {
	Webhook
	Secret string `json:"secret"`
	// PreviousSecretUntil is, after a rotation with an overlap, until when the old secret also signs.
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
}

// WebhookOf is ep as the API shows it.
func WebhookOf(ep dispatch.Endpoint) Webhook {
	w := Webhook{ID: ep.ID, WorkspaceID: ep.Workspace, MemberID: ep.Member, URL: ep.URL, Description: ep.Description,
		EventTypes: ep.EventTypes, Resources: ep.Resources, Enabled: ep.Enabled, CreatedAt: ep.CreatedAt, UpdatedAt: ep.UpdatedAt}
	if ep.DisabledReason != "" {
		w.DisabledReason = &ep.DisabledReason
	}
	return w
}

// auditValues are the values of w an audit entry records (never a secret).
func (w Webhook) auditValues() map[string]any {
	return map[string]any{"member_id": w.MemberID, "url": w.URL, "description": w.Description, "event_types": w.EventTypes,
		"resources": w.Resources, "enabled": w.Enabled}
}

var errNoWebhook = apierr.New(apierr.NotFound, "No such webhook endpoint in this workspace.")

// webhookError turns the registry's errors into the API's: an endpoint of another workspace, or none, is
// 404; field errors are 422 naming the body's members.
func webhookError(err error) error {
	var list field.ErrorList
	switch {
	case errors.Is(err, dispatch.ErrNotFound):
		return errNoWebhook
	case errors.As(err, &list):
		out := make(field.ErrorList, len(list))
		for i, fe := range list {
			out[i] = fe
			if fe.Field == "member" {
				out[i].Field = "member_id"
			}
		}
		return apierr.Refused(out)
	}
	return err
}

// webhookAction is one thing a manager does with a webhook endpoint: one per admin webhook route, the
// update split by what it changes. webhookRules says who may take each.
type webhookAction string

// The webhook actions.
const (
	hookList       webhookAction = "list"          // GET /v1/admin/webhooks
	hookGet        webhookAction = "get"           // GET /v1/admin/webhooks/{id}
	hookCreate     webhookAction = "create"        // POST /v1/admin/webhooks: the endpoint's owner is member_id
	hookSettings   webhookAction = "settings"      // PATCH …/{id} of description, event_types, resources, enabled
	hookRepoint    webhookAction = "repoint"       // PATCH …/{id} naming url
	hookDelete     webhookAction = "delete"        // DELETE …/{id}
	hookRotate     webhookAction = "rotate_secret" // POST …/{id}/rotate-secret
	hookReplay     webhookAction = "replay"        // POST …/{id}/replay
	hookDeliveries webhookAction = "deliveries"    // GET …/{id}/deliveries
)

// webhookRule is who besides an endpoint's owner may take an action on it.
type webhookRule struct {
	// AnyManager: every member whose role holds api.manage (the admin routes' scope), whatever their
	// role next to the owner's. Otherwise the action is the owner's alone.
	AnyManager bool
	// Why is the message of the 403 refusing an action that is the owner's alone.
	Why string
}

// webhookRules is the one allow-list of what a manager may do with an endpoint another member owns;
// every webhook operation consults it (mayWebhook), and an action it does not list is the owner's alone.
//
// An endpoint sends its owner's view of the events — their role, record rules and masks — to the URL its
// owner chose, signed with a secret only its owner holds, as a key acts for its owner. Another manager
// oversees it as they oversee members' keys (docs/issue-24.md): they see it (never its secret), turn it
// off or on, describe and filter it, and delete it — none of which shows them a payload or lets them
// speak for the endpoint. What would is the owner's alone, whatever the manager's role: making an
// endpoint someone else owns or pointing one at a new URL (that view sent where the manager chose),
// rotating its secret (a secret to sign forgeries the owner's receiver accepts, or to cut the owner's
// deliveries off), replaying (the owner's view sent again, on the manager's say) and the delivery log
// (which events the owner's view holds, and the start of each answer of the owner's receiver). A role
// "at least as broad" as the owner's is not enough: record rules such as owned and department are
// relative to the member, so the same role reads other records.
var webhookRules = map[webhookAction]webhookRule{
	hookList:     {AnyManager: true},
	hookGet:      {AnyManager: true},
	hookSettings: {AnyManager: true},
	hookDelete:   {AnyManager: true},
	hookCreate: {Why: "You may create only endpoints you own: an endpoint delivers its owner's view of the events, " +
		"and one owned by another member would send their view to an address you chose."},
	hookRepoint: {Why: "Only the endpoint's owner may point it at a new URL: it delivers its owner's view of the events " +
		"to an address its owner chose."},
	hookRotate: {Why: "Only the endpoint's owner may rotate its secret: the secret signs the owner's deliveries, and " +
		"another's copy could forge them or cut them off. Disable or delete the endpoint instead."},
	hookReplay: {Why: "Only the endpoint's owner may replay events to it: a replay sends the owner's view of the events again."},
	hookDeliveries: {Why: "Only the endpoint's owner may read its delivery log: it shows which events the owner's view holds " +
		"and what the owner's receiver answered."},
}

// mayWebhook is nil when the actor may take act on an endpoint owned by owner: the owner may take every
// action, another manager those webhookRules lets any manager take (else 403 permission_denied).
func mayWebhook(a Actor, owner string, act webhookAction) error {
	if strings.EqualFold(owner, a.Principal.Member.ID) {
		return nil
	}
	rule, ok := webhookRules[act]
	if ok && rule.AnyManager {
		return nil
	}
	if rule.Why == "" {
		return apierr.New(apierr.PermissionDenied, "Only the webhook endpoint's owner may do this.")
	}
	return apierr.New(apierr.PermissionDenied, rule.Why)
}

// endpointFor returns endpoint id of the actor's workspace if the actor may take act on it: 404 when the
// workspace has none, 403 when act is its owner's alone. (Its owner never changes, so the answer holds
// for the change that follows.)
func (s *Service) endpointFor(ctx context.Context, a Actor, id string, act webhookAction) (dispatch.Endpoint, error) {
	ep, err := s.cfg.Webhooks.Get(ctx, a.Principal.Workspace.ID, id)
	if err != nil {
		return dispatch.Endpoint{}, webhookError(err)
	}
	if err := mayWebhook(a, ep.Member, act); err != nil {
		return dispatch.Endpoint{}, err
	}
	return ep, nil
}

// Webhooks lists the endpoints of the actor's workspace, oldest first.
func (s *Service) Webhooks(ctx context.Context, a Actor) ([]Webhook, error) {
	eps, err := s.cfg.Webhooks.List(ctx, a.Principal.Workspace.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Webhook, 0, len(eps))
	for _, ep := range eps {
		if mayWebhook(a, ep.Member, hookList) == nil {
			out = append(out, WebhookOf(ep))
		}
	}
	return out, nil
}

// Webhook returns endpoint id of the actor's workspace.
func (s *Service) Webhook(ctx context.Context, a Actor, id string) (Webhook, error) {
	ep, err := s.endpointFor(ctx, a, id, hookGet)
	if err != nil {
		return Webhook{}, err
	}
	return WebhookOf(ep), nil
}

// webhookInput reads a create (create true) or update body into the registry's input; member_id (create
// only) defaults to "". Members of the wrong type, and unknown members, are 422.
func webhookInput(body map[string]any, create bool) (dispatch.Input, string, error) {
	var in dispatch.Input
	var member string
	var errs field.ErrorList
	bad := func(name, msg string) {
		errs = append(errs, field.New(field.CodeType, field.NewPath(name), msg))
	}
	list := func(name string, v any) *[]string {
		out := new([]string)
		if v == nil {
			return out // null: every type or resource
		}
		items, ok := v.([]any)
		if !ok {
			bad(name, "must be an array of strings, or null for all")
			return nil
		}
		*out = []string{}
		for i, it := range items {
			s, ok := it.(string)
			if !ok {
				errs = append(errs, field.New(field.CodeType, field.NewPath(name).Index(i), "must be a string"))
				continue
			}
			*out = append(*out, s)
		}
		return out
	}
	text := func(name string, v any) *string {
		s, ok := v.(string)
		if !ok {
			bad(name, "must be a string")
			return nil
		}
		return &s
	}
	names := make([]string, 0, len(body))
	for k := range body {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := body[k]
		switch k {
		case "url":
			in.URL = text(k, v)
		case "description":
			in.Description = text(k, v)
		case "event_types":
			in.EventTypes = list(k, v)
		case "resources":
			in.Resources = list(k, v)
		case "enabled":
			b, ok := v.(bool)
			if !ok {
				bad(k, "must be true or false")
				continue
			}
			in.Enabled = &b
		case "member_id":
			if !create {
				errs = append(errs, field.New(field.CodeReadOnly, field.NewPath(k), "the owner of an endpoint does not change; create another endpoint"))
				continue
			}
			if m := text(k, v); m != nil {
				if !model.IsUUID(*m) {
					errs = append(errs, field.New(field.CodeFormat, field.NewPath(k), "must be a member's id (a UUID)"))
					continue
				}
				member = strings.ToLower(*m)
			}
		default:
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a member of this body"))
		}
	}
	if errs != nil {
		return in, "", apierr.Refused(errs)
	}
	return in, member, nil
}

// CreateWebhook adds an endpoint to the actor's workspace from body {url, description?, event_types?,
// resources?, enabled?, member_id?} (the owner, whose view of the events the payloads are: by default
// the actor's member) and returns it with its secret, shown this once.
func (s *Service) CreateWebhook(ctx context.Context, a Actor, body map[string]any) (WebhookSecret, error) {
	in, member, err := webhookInput(body, true)
	if err != nil {
		return WebhookSecret{}, err
	}
	if member == "" {
		member = a.Principal.Member.ID
	}
	if err := mayWebhook(a, member, hookCreate); err != nil {
		return WebhookSecret{}, err
	}
	ws := a.Principal.Workspace.ID
	ep, err := s.cfg.Webhooks.CreateThen(store.WithWorkspace(ctx, ws), ws, member, in, func(ctx context.Context, q store.Querier, _, after dispatch.Endpoint) error {
		return s.record(ctx, q, a, audit.AdminWebhooks, after.ID, "create", WebhookOf(after).auditValues(), nil)
	})
	if err != nil {
		return WebhookSecret{}, webhookError(err)
	}
	return WebhookSecret{Webhook: WebhookOf(ep), Secret: ep.Secret}, nil
}

// UpdateWebhook changes endpoint id from body {url?, description?, event_types?, resources?, enabled?}
// (null lists: every type or resource). Enabling clears the reason it was disabled. A body naming url is
// hookRepoint, any other hookSettings.
func (s *Service) UpdateWebhook(ctx context.Context, a Actor, id string, body map[string]any) (Webhook, error) {
	in, _, err := webhookInput(body, false)
	if err != nil {
		return Webhook{}, err
	}
	if len(body) == 0 {
		return Webhook{}, apierr.Invalid("The body changes nothing: send at least one of url, description, event_types, resources and enabled.", nil)
	}
	act := hookSettings
	if _, ok := body["url"]; ok {
		act = hookRepoint
	}
	if _, err := s.endpointFor(ctx, a, id, act); err != nil {
		return Webhook{}, err
	}
	ws := a.Principal.Workspace.ID
	ep, err := s.cfg.Webhooks.UpdateThen(store.WithWorkspace(ctx, ws), ws, id, in, func(ctx context.Context, q store.Querier, before, after dispatch.Endpoint) error {
		changes, previous := map[string]any{}, map[string]any{}
		old, cur := WebhookOf(before).auditValues(), WebhookOf(after).auditValues()
		for k, v := range cur {
			if !sameJSON(v, old[k]) {
				changes[k], previous[k] = v, old[k]
			}
		}
		return s.record(ctx, q, a, audit.AdminWebhooks, after.ID, "update", changes, previous)
	})
	if err != nil {
		return Webhook{}, webhookError(err)
	}
	return WebhookOf(ep), nil
}

func sameJSON(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

// DeleteWebhook removes endpoint id with its pending deliveries and delivery log.
func (s *Service) DeleteWebhook(ctx context.Context, a Actor, id string) (string, error) {
	if _, err := s.endpointFor(ctx, a, id, hookDelete); err != nil {
		return "", err
	}
	ws := a.Principal.Workspace.ID
	var deleted string
	err := s.cfg.Webhooks.DeleteThen(store.WithWorkspace(ctx, ws), ws, id, func(ctx context.Context, q store.Querier, before, _ dispatch.Endpoint) error {
		deleted = before.ID
		return s.record(ctx, q, a, audit.AdminWebhooks, before.ID, "delete", nil, WebhookOf(before).auditValues())
	})
	if err != nil {
		return "", webhookError(err)
	}
	return deleted, nil
}

// DefaultSecretOverlap is how long a rotated secret keeps signing when the body names no overlap (as
// recordsctl webhook rotate-secret).
const DefaultSecretOverlap = 24 * time.Hour

// RotateWebhookSecret gives endpoint id a new secret, shown this once; body {overlap?} ("24h" by default,
// at most "168h"; "0s": the old secret stops signing now).
func (s *Service) RotateWebhookSecret(ctx context.Context, a Actor, id string, body map[string]any) (WebhookSecret, error) {
	if _, err := s.endpointFor(ctx, a, id, hookRotate); err != nil {
		return WebhookSecret{}, err
	}
	overlap := DefaultSecretOverlap
	var errs field.ErrorList
	for k, v := range body {
		switch k {
		case "overlap":
			text, ok := v.(string)
			d, err := time.ParseDuration(text)
			if !ok || err != nil {
				errs = append(errs, field.New(field.CodeFormat, field.NewPath(k), "must be a duration such as 24h, 90m or 0s"))
				continue
			}
			overlap = d
		default:
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a member of this body"))
		}
	}
	if errs != nil {
		return WebhookSecret{}, apierr.Refused(errs)
	}
	ws := a.Principal.Workspace.ID
	var until *time.Time
	ep, err := s.cfg.Webhooks.RotateSecretThen(store.WithWorkspace(ctx, ws), ws, id, overlap, func(ctx context.Context, q store.Querier, _, after dispatch.Endpoint) error {
		if overlap > 0 {
			t := after.UpdatedAt.Add(overlap)
			until = &t
		}
		return s.record(ctx, q, a, audit.AdminWebhooks, after.ID, audit.ActionRotateSecret, map[string]any{"previous_secret_until": until}, nil)
	})
	if err != nil {
		return WebhookSecret{}, webhookError(err)
	}
	return WebhookSecret{Webhook: WebhookOf(ep), Secret: ep.Secret, PreviousSecretUntil: until}, nil
}

// Replayed is what a replay queued.
type Replayed struct {
	ID     string `json:"id"`
	Queued int    `json:"queued"`
}

// ReplayWebhook queues events again for endpoint id, as new deliveries due now: body {event_id} (one
// event of the feed) or {after} (every event after that sequence the endpoint takes, at most
// dispatch.MaxReplay; 0: every event the feed holds).
func (s *Service) ReplayWebhook(ctx context.Context, a Actor, id string, body map[string]any) (Replayed, error) {
	if _, err := s.endpointFor(ctx, a, id, hookReplay); err != nil {
		return Replayed{}, err
	}
	var eventID string
	var after int64
	var errs field.ErrorList
	_, hasEvent := body["event_id"]
	_, hasAfter := body["after"]
	if hasEvent == hasAfter {
		errs = append(errs, field.New(field.CodeConflicting, field.NewPath("event_id"), "send exactly one of event_id and after"))
	}
	for k, v := range body {
		switch k {
		case "event_id":
			text, ok := v.(string)
			if !ok || !model.IsUUID(text) {
				errs = append(errs, field.New(field.CodeFormat, field.NewPath(k), "must be an event's id (a UUID)"))
				continue
			}
			eventID = strings.ToLower(text)
		case "after":
			n, ok := v.(json.Number)
			var err error
			if ok {
				after, err = strconv.ParseInt(n.String(), 10, 64)
			}
			if !ok || err != nil || after < 0 {
				errs = append(errs, field.New(field.CodeType, field.NewPath(k), "must be a sequence: an integer, 0 or more"))
			}
		default:
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a member of this body"))
		}
	}
	if errs != nil {
		return Replayed{}, apierr.Refused(errs)
	}
	ws := a.Principal.Workspace.ID
	n, err := s.cfg.Webhooks.ReplayThen(store.WithWorkspace(ctx, ws), ws, id, eventID, after, func(ctx context.Context, q store.Querier, ep dispatch.Endpoint, queued int) error {
		changes := map[string]any{"queued": queued}
		if eventID != "" {
			changes["event_id"] = eventID
		} else {
			changes["after"] = after
		}
		return s.record(ctx, q, a, audit.AdminWebhooks, ep.ID, audit.ActionReplay, changes, nil)
	})
	if errors.Is(err, dispatch.ErrEventNotFound) {
		return Replayed{}, apierr.Refused(field.ErrorList{field.New(field.CodeNotFound, field.NewPath("event_id"), "no such event in the feed")})
	}
	if err != nil {
		return Replayed{}, webhookError(err)
	}
	ep := strings.ToLower(id)
	return Replayed{ID: ep, Queued: n}, nil
}

// DeliveryAttempt is one attempt of a delivery: the receiver's status (null when none came), outcome,
// latency, and the error and the start of the answer (null when none).
type DeliveryAttempt struct {
	N         int       `json:"n"`
	At        time.Time `json:"at"`
	Status    *int      `json:"status"`
	Outcome   string    `json:"outcome"`
	LatencyMS int64     `json:"latency_ms"`
	Error     *string   `json:"error"`
	Response  *string   `json:"response"`
}

// Delivery is one event's delivery to an endpoint with its attempts.
type Delivery struct {
	ID            string            `json:"id"`
	EndpointID    string            `json:"endpoint_id"`
	EventID       string            `json:"event_id"`
	Sequence      int64             `json:"sequence"`
	State         string            `json:"state"`
	Attempts      []DeliveryAttempt `json:"attempts"`
	NextAttemptAt *time.Time        `json:"next_attempt_at"`
	CreatedAt     time.Time         `json:"created_at"`
	DoneAt        *time.Time        `json:"done_at"`
}

// Bounds of a page of deliveries.
const (
	DefaultDeliveries = 50
	MaxDeliveries     = 1000
)

// DeliveryStates are the states a delivery listing filters on.
var DeliveryStates = []string{dispatch.StatePending, dispatch.StateDelivered, dispatch.StateFailed, dispatch.StateSkipped}

// DeliveryQuery selects a page of an endpoint's deliveries: state "" every state, limit 0 the default,
// cursor "" the newest.
type DeliveryQuery struct {
	State  string
	Limit  int
	Cursor string
}

// Deliveries returns a page of endpoint id's deliveries, newest first, with their attempts, and the
// cursor of the next page (nil at the end).
func (s *Service) Deliveries(ctx context.Context, a Actor, id string, dq DeliveryQuery) ([]Delivery, *string, error) {
	if _, err := s.endpointFor(ctx, a, id, hookDeliveries); err != nil {
		return nil, nil, err
	}
	var errs field.ErrorList
	if dq.State != "" && !slices.Contains(DeliveryStates, dq.State) {
		errs = append(errs, field.New(field.CodeOption, field.NewPath("state"), "must be one of "+strings.Join(DeliveryStates, ", ")))
	}
	if dq.Limit == 0 {
		dq.Limit = DefaultDeliveries
	}
	if dq.Limit < 1 || dq.Limit > MaxDeliveries {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("limit"), fmt.Sprintf("must be 1 to %d", MaxDeliveries)))
	}
	ws := a.Principal.Workspace.ID
	var before *dispatch.Place
	if dq.Cursor != "" {
		p, err := s.readDeliveryCursor(ws, strings.ToLower(id), dq.State, dq.Cursor)
		if err != nil {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("cursor"), "is not a cursor of this list: send meta.next_cursor verbatim"))
		}
		before = p
	}
	if errs != nil {
		return nil, nil, apierr.Invalid("", errs)
	}
	list, err := s.cfg.Webhooks.DeliveriesBefore(ctx, ws, id, dq.State, dq.Limit+1, before)
	if err != nil {
		return nil, nil, webhookError(err)
	}
	var next *string
	if len(list) > dq.Limit {
		list = list[:dq.Limit]
		last := list[len(list)-1]
		c := s.deliveryCursor(ws, strings.ToLower(id), dq.State, dispatch.Place{Seq: last.Sequence, ID: last.ID})
		next = &c
	}
	out := make([]Delivery, len(list))
	for i, d := range list {
		out[i] = Delivery{ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, Sequence: d.Sequence, State: d.State, NextAttemptAt: d.NextAttempt,
			CreatedAt: d.CreatedAt, DoneAt: d.DoneAt, Attempts: make([]DeliveryAttempt, len(d.Attempts))}
		for j, at := range d.Attempts {
			out[i].Attempts[j] = DeliveryAttempt{N: at.N, At: at.At, Status: at.Status, Outcome: at.Outcome, LatencyMS: at.LatencyMS}
			if at.Error != "" {
				out[i].Attempts[j].Error = &d.Attempts[j].Error
			}
			if at.Response != "" {
				out[i].Attempts[j].Response = &d.Attempts[j].Response
			}
		}
	}
	return out, next, nil
}

// deliveryScope is the walk of endpoint's deliveries in workspace filtered by state, for the API's one
// keyset cursor (listplan.EncodeKeyset): a cursor of another list, or edited, is refused.
func deliveryScope(workspace, endpoint, state string) string {
	return listplan.WalkScope("webhook_deliveries", workspace, endpoint, state)
}

// deliveryCursor is the cursor resuming the deliveries of endpoint after place p.
func (s *Service) deliveryCursor(workspace, endpoint, state string, p dispatch.Place) string {
	return listplan.EncodeKeyset(s.cfg.CursorSecret, deliveryScope(workspace, endpoint, state), p.Seq, p.ID)
}

// readDeliveryCursor returns the place a cursor of deliveryCursor resumes after.
func (s *Service) readDeliveryCursor(workspace, endpoint, state, c string) (*dispatch.Place, error) {
	key, id, err := listplan.DecodeKeyset(s.cfg.CursorSecret, deliveryScope(workspace, endpoint, state), c)
	if err != nil {
		return nil, err
	}
	n, ok := key.(json.Number)
	if !ok {
		return nil, listplan.ErrCursor
	}
	seq, err := n.Int64()
	if err != nil {
		return nil, listplan.ErrCursor
	}
	return &dispatch.Place{Seq: seq, ID: id}, nil
}
