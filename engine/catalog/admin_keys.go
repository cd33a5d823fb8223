package catalog

import (
	"slices"
	"sort"

	"github.com/workspace-records/records/engine/route"
)

// keyAdminOperations adds the operations of its admin routes to ops, by admin operation (docs/issue-24.md),
// and the schemas they answer with to the document's components.
func (d *doc) keyAdminOperations(ops map[route.AdminOp]map[string]any) {
	schemas := d.comps["schemas"].(map[string]any)
	for name, s := range keyAdminSchemas() {
		schemas[name] = s
	}
	id := func(what string) map[string]any {
		return map[string]any{"name": "id", "in": "path", "required": true, "description": "The " + what + "'s id. An id of another workspace is 404, as one that does not exist.",
			"schema": map[string]any{"type": "string", "format": "uuid"}}
	}
	query := func(name, desc string, s map[string]any) map[string]any {
		return map[string]any{"name": name, "in": "query", "description": desc, "schema": s}
	}
	body := func(desc string, required bool, s map[string]any) map[string]any {
		return map[string]any{"required": required, "description": desc, "content": jsonContent(s)}
	}
	op := func(opID, tag, summary, desc string) map[string]any {
		return map[string]any{"operationId": opID, "tags": []string{tag}, "summary": summary,
			"description": desc + "\n\nAn admin key only (access `admin`) whose owner's role holds `api.manage`: a data key is 403 `insufficient_scope`, an owner without `api.manage` 403 `permission_denied`."}
	}
	const keysTag, hooksTag = "admin-keys", "admin-webhooks"
	// Who may take each action on an endpoint another member owns: runtime/admin's webhookRules.
	anyManager := "\n\nAny manager may, on any endpoint of the workspace, not only their own (docs/issue-24.md, \"Webhooks deliver their owner's view\")."
	ownerOnly := func(what string) string {
		return "\n\nOnly the endpoint's owner (`member_id`) may " + what + ": any other manager, whatever their role, is 403 `permission_denied` (docs/issue-24.md, \"Webhooks deliver their owner's view\")."
	}
	auditNote := func(action string) string {
		return " Writes an audit entry (resource `admin.webhook_endpoints`, action `" + action + "`, record id the endpoint's) in the change's transaction; never the secret."
	}

	ops[route.AdminKeysList] = withResponses(keyAdminMerge(op("adminListKeys", keysTag, "Members' keys",
		"Every member's API keys of the workspace, newest first, never a secret nor its hash: owner, hint, access, restrictions, creation, expiry, revocation, last use (this server's not yet written use included) and state."),
		map[string]any{"parameters": []any{
			query("member", "Only this member's keys (a member id).", map[string]any{"type": "string", "format": "uuid"}),
			query("state", "Only keys in this state.", map[string]any{"type": "string", "enum": []string{"active", "revoked", "expired"}}),
		}}),
		"200", keyAdminList("The keys (the whole list: `meta.next_cursor` is null).", schemaRef("ApiKey")), "400", "401", "403", "429", "500", "503")
	ops[route.AdminKeysGet] = withResponses(keyAdminMerge(op("adminGetKey", keysTag, "A member's key", "One key of the workspace, never its secret."),
		map[string]any{"parameters": []any{id("key")}}),
		"200", ok("The key.", schemaRef("ApiKey")), "400", "401", "403", "404", "429", "500", "503")
	ops[route.AdminKeysRevoke] = withResponses(keyAdminMerge(op("adminRevokeKey", keysTag, "Revoke a member's key",
		"Revokes the key: every server refuses it (401 `invalid_api_key`) from its next request. Revoking a revoked key keeps its first revocation time. No body (or `{}`). "+
			"Writes an audit entry (resource `admin.api_keys`, action `revoke`, record id the key's) in the revoking transaction."),
		map[string]any{"parameters": []any{id("key")}, "requestBody": body("Nothing: an empty body or `{}`.", false, map[string]any{"type": "object", "additionalProperties": false})}),
		"200", ok("The key as revoked.", schemaRef("ApiKey")), "400", "401", "403", "404", "413", "422", "429", "500", "503")
	ops[route.AdminUsage] = withResponses(keyAdminMerge(op("adminGetUsage", keysTag, "Usage per key and day",
		"Requests and refusals (answers 403 and 429) of each key of the workspace per UTC day, the workspace's totals per day (every day of the range), and its monthly quota. "+
			"Each server counts in memory and adds its counts to the stored ones every `key_usage_interval` (10 s by default): a request shows here once its server has flushed. "+
			"Dates are UTC days, `YYYY-MM-DD`, both included; without them the last 30 days. A malformed date, `from` after `to`, or a range of more than 366 days is 400 `invalid_request`."),
		map[string]any{"parameters": []any{
			query("from", "The first day (default: 29 days before `to`).", map[string]any{"type": "string", "format": "date"}),
			query("to", "The last day (default: today, UTC).", map[string]any{"type": "string", "format": "date"}),
			query("key", "Only this key (a key id; another workspace's is 404).", map[string]any{"type": "string", "format": "uuid"}),
		}}),
		"200", ok("The usage report.", schemaRef("AdminUsage")), "400", "401", "403", "404", "429", "500", "503")

	ops[route.AdminWebhooksList] = withResponses(op("adminListWebhooks", hooksTag, "Webhook endpoints",
		"The workspace's webhook endpoints, every member's, oldest first, never with their secrets."+anyManager),
		"200", keyAdminList("The endpoints (the whole list: `meta.next_cursor` is null).", schemaRef("AdminWebhook")), "400", "401", "403", "429", "500", "503")
	ops[route.AdminWebhooksCreate] = withResponses(keyAdminMerge(op("adminCreateWebhook", hooksTag, "Create a webhook endpoint",
		"Adds an endpoint, as `recordsctl webhook create`: events are POSTed to `url`, signed the Standard Webhooks way with the endpoint's secret (`whsec_…`), shown in this answer only. "+
			"Only http and https URLs in their encoded form (no character RFC 3986 does not allow, such as `\"`, `<`, `>` or a space: percent-encode them), and no address in loopback, private, link-local or other internal ranges unless the server's `webhook_allow_private_addresses` is on (422 naming `url`). "+
			"Payloads are the events as the owner (`member_id`, by default the caller's member) may read them in the feed."+auditNote("create")+
			"\n\nA manager creates only endpoints they own: a `member_id` other than the caller's member is 403 `permission_denied`, whatever their role."),
		map[string]any{"requestBody": body("The endpoint.", true, schemaRef("AdminWebhookCreate"))}),
		"201", ok("The endpoint with its secret, shown this once.", schemaRef("AdminWebhookSecret")), "400", "401", "403", "413", "422", "429", "500", "503")
	ops[route.AdminWebhooksGet] = withResponses(keyAdminMerge(op("adminGetWebhook", hooksTag, "A webhook endpoint", "One endpoint of the workspace, never its secret."+anyManager),
		map[string]any{"parameters": []any{id("endpoint")}}),
		"200", ok("The endpoint.", schemaRef("AdminWebhook")), "400", "401", "403", "404", "429", "500", "503")
	ops[route.AdminWebhooksUpdate] = withResponses(keyAdminMerge(op("adminUpdateWebhook", hooksTag, "Change a webhook endpoint",
		"Changes the members sent, as `recordsctl webhook update`; `null` lists mean every event type or resource. Enabling an endpoint clears why it was disabled; its failed deliveries stay failed (replay sends them again)."+auditNote("update")+
			"\n\nAny manager may change `description`, `event_types`, `resources` and `enabled` of any endpoint of the workspace. Only the endpoint's owner (`member_id`) may send a body naming `url`: any other manager, whatever their role, is 403 `permission_denied` (docs/issue-24.md, \"Webhooks deliver their owner's view\")."),
		map[string]any{"parameters": []any{id("endpoint")}, "requestBody": body("The changes: at least one member.", true, schemaRef("AdminWebhookUpdate"))}),
		"200", ok("The endpoint as changed.", schemaRef("AdminWebhook")), "400", "401", "403", "404", "413", "422", "429", "500", "503")
	ops[route.AdminWebhooksDelete] = withResponses(keyAdminMerge(op("adminDeleteWebhook", hooksTag, "Delete a webhook endpoint",
		"Removes the endpoint, its pending deliveries and its delivery log. No body (or `{}`)."+auditNote("delete")+anyManager),
		map[string]any{"parameters": []any{id("endpoint")}, "requestBody": body("Nothing: an empty body or `{}`.", false, map[string]any{"type": "object", "additionalProperties": false})}),
		"200", ok("The deleted endpoint's id.", map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "deleted"},
			"properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "deleted": map[string]any{"type": "boolean", "enum": []bool{true}}}}),
		"400", "401", "403", "404", "413", "422", "429", "500", "503")
	ops[route.AdminWebhooksRotateSecret] = withResponses(keyAdminMerge(op("adminRotateWebhookSecret", hooksTag, "Rotate a webhook endpoint's secret",
		"Gives the endpoint a new secret, shown in this answer only, as `recordsctl webhook rotate-secret`: for `overlap` (default 24h, at most 168h; `0s` stops the old one now) every delivery carries both signatures, so a receiver can switch without missing one."+auditNote("rotate_secret")+ownerOnly("rotate its secret")),
		map[string]any{"parameters": []any{id("endpoint")}, "requestBody": body("How long the old secret keeps signing (optional).", false, map[string]any{"type": "object", "additionalProperties": false,
			"properties": map[string]any{"overlap": map[string]any{"type": "string", "description": "A duration such as `24h`, `90m` or `0s`, at most `168h`.", "default": "24h"}}})}),
		"200", ok("The endpoint with its new secret, shown this once.", schemaRef("AdminWebhookSecret")), "400", "401", "403", "404", "413", "422", "429", "500", "503")
	ops[route.AdminWebhooksDeliveries] = withResponses(keyAdminMerge(op("adminListWebhookDeliveries", hooksTag, "A webhook endpoint's deliveries",
		"The endpoint's deliveries, newest first (by the event's sequence), each with its attempts, as `recordsctl webhook deliveries`. Paged: send `meta.next_cursor` as `cursor` until it is null."+ownerOnly("read its deliveries")),
		map[string]any{"parameters": []any{id("endpoint"),
			query("state", "Only deliveries in this state.", map[string]any{"type": "string", "enum": []string{"pending", "delivered", "failed", "skipped"}}),
			query("limit", "Deliveries per page.", map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}),
			query("cursor", "The previous page's `meta.next_cursor`, verbatim (a cursor of another list is 400).", map[string]any{"type": "string", "maxLength": 200}),
		}}),
		"200", keyAdminList("A page of deliveries.", schemaRef("AdminWebhookDelivery")), "400", "401", "403", "404", "429", "500", "503")
	ops[route.AdminWebhooksReplay] = withResponses(keyAdminMerge(op("adminReplayWebhook", hooksTag, "Replay events to a webhook endpoint",
		"Queues events again as new deliveries due now, as `recordsctl webhook replay`: one event of the feed (`event_id`; one no longer in the feed is 422) or every event after a sequence (`after`; 0 for every event the feed holds, at most 10,000) that the endpoint takes. Receivers get the same `webhook-id` as the first time."+auditNote("replay")+ownerOnly("replay events to it")),
		map[string]any{"parameters": []any{id("endpoint")}, "requestBody": body("Exactly one of `event_id` and `after`.", true, map[string]any{"type": "object", "additionalProperties": false,
			"properties": map[string]any{"event_id": map[string]any{"type": "string", "format": "uuid", "description": "The event's id in the feed."},
				"after": map[string]any{"type": "integer", "minimum": 0, "description": "A sequence: every event after it."}}})}),
		"200", ok("What was queued.", map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "queued"},
			"properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid", "description": "The endpoint."}, "queued": map[string]any{"type": "integer", "minimum": 0, "description": "The deliveries queued."}}}),
		"400", "401", "403", "404", "413", "422", "429", "500", "503")
}

// keyAdminMerge returns op with the members of more added.
func keyAdminMerge(op, more map[string]any) map[string]any {
	for k, v := range more {
		op[k] = v
	}
	return op
}

// keyAdminList is the answer of an admin list: data and meta.next_cursor.
func keyAdminList(desc string, item any) map[string]any {
	return map[string]any{"description": desc, "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...),
		"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false,
			"properties": map[string]any{"data": map[string]any{"type": "array", "items": item}, "meta": schemaRef("ListMeta")}})}
}

// keyAdminSchemas are the components of the keys area's answers and bodies.
func keyAdminSchemas() map[string]any {
	uuid := map[string]any{"type": "string", "format": "uuid"}
	ts := map[string]any{"type": "string", "format": "date-time"}
	nullTS := func(desc string) map[string]any {
		return map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": desc}
	}
	strList := func(desc string) map[string]any {
		return map[string]any{"type": []string{"array", "null"}, "items": map[string]any{"type": "string"}, "description": desc}
	}
	obj := func(desc string, props map[string]any) map[string]any {
		req := make([]string, 0, len(props))
		for k := range props {
			req = append(req, k)
		}
		sort.Strings(req)
		return map[string]any{"type": "object", "additionalProperties": false, "required": req, "description": desc, "properties": props}
	}
	member := obj("The key's owner.", map[string]any{"id": uuid, "email": map[string]any{"type": "string", "format": "email"}})
	day := obj("One UTC day's counts.", map[string]any{
		"day":      map[string]any{"type": "string", "format": "date"},
		"requests": map[string]any{"type": "integer", "minimum": 0, "description": "Requests answered to the key (or the workspace's keys)."},
		"refusals": map[string]any{"type": "integer", "minimum": 0, "description": "Of them, answers 403 or 429."},
	})
	webhook := map[string]any{
		"id": uuid, "workspace_id": uuid, "member_id": map[string]any{"type": "string", "format": "uuid", "description": "The owner: payloads are the events as this member may read them."},
		"url": map[string]any{"type": "string", "format": "uri"}, "description": map[string]any{"type": "string", "maxLength": 500},
		"event_types":     strList("The event types sent (`companies.created`, …); null: every type."),
		"resources":       strList("The resources whose events are sent; null: every resource."),
		"enabled":         map[string]any{"type": "boolean"},
		"disabled_reason": map[string]any{"type": []string{"string", "null"}, "description": "Why the endpoint was disabled (after its retries were spent); null when enabled or disabled by hand."},
		"created_at":      ts, "updated_at": ts,
	}
	withSecret := map[string]any{}
	for k, v := range webhook {
		withSecret[k] = v
	}
	withSecret["secret"] = map[string]any{"type": "string", "pattern": "^whsec_", "description": "The signing secret, shown in this answer only."}
	secretSchema := obj("A webhook endpoint with its signing secret, shown this once.", withSecret)
	secretSchema["required"] = keyAdminWithout(secretSchema["required"].([]string), "previous_secret_until")
	secretSchema["properties"].(map[string]any)["previous_secret_until"] = map[string]any{"type": "string", "format": "date-time", "description": "After a rotation with an overlap: until when the old secret also signs."}
	inputProps := func(create bool) map[string]any {
		p := map[string]any{
			"url": map[string]any{"type": "string", "maxLength": 2048, "description": "An http or https URL; not an internal address (unless the server allows private addresses). " +
				"Stored and shown as sent, so in its encoded form: only the characters RFC 3986 allows; a space, `\"`, `<`, `>`, `\\`, `^`, `` ` ``, `{`, `|`, `}`, a control character or one outside ASCII is 422 naming `url` (send it percent-encoded, `%22` for `\"`; a host in its IDNA form, `xn--…`)."},
			"description": map[string]any{"type": "string", "maxLength": 500},
			"event_types": strList("Send only these event types; null or absent on create: every type."),
			"resources":   strList("Send only the events of these resources; null or absent on create: every resource."),
			"enabled":     map[string]any{"type": "boolean", "description": "Whether deliveries are made."},
		}
		if create {
			p["member_id"] = map[string]any{"type": "string", "format": "uuid", "description": "The owner, a member of the workspace (default: the caller's member)."}
		}
		return p
	}
	create := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"url"}, "description": "A new webhook endpoint.", "properties": inputProps(true)}
	update := map[string]any{"type": "object", "additionalProperties": false, "minProperties": 1, "description": "Changes to a webhook endpoint.", "properties": inputProps(false)}
	return map[string]any{
		"ApiKey": optional(obj("An API key as the API shows it (its owner, or an administrator): never its secret nor the secret's hash.", map[string]any{
			"id": uuid, "member": member,
			"hint":       map[string]any{"type": "string", "description": "The key's prefix and last four characters (`wsk_…1a2b`)."},
			"access":     map[string]any{"type": "string", "enum": []string{"read", "write", "admin"}},
			"resources":  strList("The resources the key may use; null: every resource."),
			"allow_ips":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The addresses or CIDRs the key may be used from; empty: any."},
			"created_at": ts, "expires_at": ts,
			"revoked_at":   nullTS("When the key was revoked; null while not revoked."),
			"last_used_at": nullTS("When the key was last used, as stored by every server (each writes every `key_usage_interval`) or seen by this one; null before its first use."),
			"last_used_ip": map[string]any{"type": []string{"string", "null"}, "description": "The client address of that use; null when unknown."},
			"state":        map[string]any{"type": "string", "enum": []string{"active", "revoked", "expired"}},
			"name":         map[string]any{"type": "string", "description": "The owner's label for the key; absent when none."},
			"assured_at":   map[string]any{"type": "string", "format": "date-time", "description": "The console sign-in the key delegates (docs/issue-24.md); absent for keys made by recordsctl, whose creation is their assurance."},
			"rolled_from":  map[string]any{"type": "string", "format": "uuid", "description": "The key this one replaced (roll); absent otherwise."},
			"rolled_to":    map[string]any{"type": "string", "format": "uuid", "description": "The key that replaced this one (roll); absent otherwise."},
		}), "name", "assured_at", "rolled_from", "rolled_to"),
		"AdminUsage": obj("The workspace's usage between two UTC days.", map[string]any{
			"from": map[string]any{"type": "string", "format": "date"}, "to": map[string]any{"type": "string", "format": "date"},
			"keys": map[string]any{"type": "array", "description": "The keys used in the range, busiest first.", "items": obj("One key's usage.", map[string]any{
				"key_id": uuid, "hint": map[string]any{"type": "string"}, "access": map[string]any{"type": "string", "enum": []string{"read", "write", "admin"}},
				"state": map[string]any{"type": "string", "enum": []string{"active", "revoked", "expired"}}, "member": member,
				"requests": map[string]any{"type": "integer", "minimum": 0}, "refusals": map[string]any{"type": "integer", "minimum": 0},
				"days": map[string]any{"type": "array", "items": day, "description": "The days the key was used, oldest first."},
			})},
			"days": map[string]any{"type": "array", "items": day, "maxItems": 366, "description": "Every day of the range, oldest first: the workspace's totals."},
			"quota": obj("The workspace's monthly request quota (UTC calendar month).", map[string]any{
				"period":    map[string]any{"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$", "description": "The month, `YYYY-MM`."},
				"limit":     map[string]any{"type": []string{"integer", "null"}, "minimum": 0, "description": "The plan's quota or the workspace's override; null: uncapped."},
				"used":      map[string]any{"type": "integer", "minimum": 0, "description": "Requests counted this month."},
				"remaining": map[string]any{"type": []string{"integer", "null"}, "minimum": 0, "description": "null: uncapped."},
			}),
		}),
		"AdminWebhook":       obj("A webhook endpoint, never with its secret.", webhook),
		"AdminWebhookSecret": secretSchema,
		"AdminWebhookCreate": create,
		"AdminWebhookUpdate": update,
		"AdminWebhookDelivery": obj("One event's delivery to an endpoint, with its attempts.", map[string]any{
			"id": uuid, "endpoint_id": uuid, "event_id": uuid,
			"sequence": map[string]any{"type": "integer", "minimum": 1, "description": "The event's sequence in the feed."},
			"state":    map[string]any{"type": "string", "enum": []string{"pending", "delivered", "failed", "skipped"}},
			"attempts": map[string]any{"type": "array", "items": obj("One attempt.", map[string]any{
				"n": map[string]any{"type": "integer", "minimum": 1}, "at": ts,
				"status":     map[string]any{"type": []string{"integer", "null"}, "description": "The receiver's HTTP status; null when none came."},
				"outcome":    map[string]any{"type": "string"},
				"latency_ms": map[string]any{"type": "integer", "minimum": 0},
				"error":      map[string]any{"type": []string{"string", "null"}},
				"response":   map[string]any{"type": []string{"string", "null"}, "description": "The start of the receiver's answer."},
			})},
			"next_attempt_at": nullTS("When the next attempt is due, while pending."),
			"created_at":      ts,
			"done_at":         nullTS("When the delivery ended (delivered, failed or skipped)."),
		}),
	}
}

func keyAdminWithout(s []string, x string) []string {
	out := s[:0:0]
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// optional leaves names out of schema s's required members.
func optional(s map[string]any, names ...string) map[string]any {
	var req []string
	for _, r := range s["required"].([]string) {
		if !slices.Contains(names, r) {
			req = append(req, r)
		}
	}
	s["required"] = req
	return s
}
