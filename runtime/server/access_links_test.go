package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// linkCase is an association whose other side a role restricts by a record rule, written from r.
type linkCase struct {
	r      *model.Resource
	assoc  *model.Association
	target *model.Resource
}

// linkCases derives from the catalog, for role, every association of a resource that takes link writes
// (so that its links are entries of that resource's records) whose target the role reads under a record
// rule other than all.
func linkCases(cat *model.Catalog, role *model.Role) []linkCase {
	var out []linkCase
	for _, r := range cat.Resources {
		if r.ModelScoped || r.ReadOnly() || !r.Ops.Has(model.OpUpdate) || access.For(role, r, "", "").Level == access.None {
			continue
		}
		for _, a := range r.Associations {
			target, _ := cat.Resource(a.Target)
			if pol := access.For(role, target, "", ""); pol.Level != access.None && pol.Rule != access.All {
				out = append(out, linkCase{r: r, assoc: a, target: target})
			}
		}
	}
	return out
}

// setOwner makes member the owner of record id of r (owner_id is managed: no request sets it).
func setOwner(t *testing.T, e *servertest.Env, r *model.Resource, id, member string) {
	t.Helper()
	st := e.Server.Backend().Store
	ctx := store.WithWorkspace(context.Background(), e.Workspace)
	stmt := st.Dialect().Bind(fmt.Sprintf("UPDATE %s SET %s = ? WHERE %s = ? AND %s = ?", sqlgen.Quote(r.Table), sqlgen.Quote("owner_id"), sqlgen.Quote("workspace_id"), sqlgen.Quote("id")), member, e.Workspace, id)
	if n, err := st.Exec(ctx, stmt); err != nil || n != 1 {
		t.Fatalf("set the owner of %s %s: %d rows, %v", r.Name, id, n, err)
	}
}

// linkItem is one link or unlink as a place shows it: a feed event, a webhook payload, a history entry
// or an audit entry.
type linkItem struct {
	unlink   bool
	values   map[string]any // data or changes
	withheld []string
	raw      string
}

func linkItemOf(action string, values, previous any, withheld any) linkItem {
	it := linkItem{unlink: strings.HasPrefix(action, "unlink")}
	it.values, _ = values.(map[string]any)
	if l, ok := withheld.([]any); ok {
		for _, w := range l {
			it.withheld = append(it.withheld, fmt.Sprint(w))
		}
	}
	raw, _ := json.Marshal(map[string]any{"values": values, "previous": previous, "withheld": withheld})
	it.raw = string(raw)
	return it
}

// A link names the record at its other end, and every place that shows a link — the change feed, a
// webhook payload, a record's history, the audit trail of the admin API and of recordsctl audit list
// --as-member — names it exactly when the association list and expand show that record to the reader:
// a link to a record outside the reader's record rule is withheld (the association left out of the
// values and named in withheld), as a link to a resource the reader cannot use is. Driven by the
// catalog: every association whose target a shipped role with API access restricts by a record rule,
// for a member of that role (feed, webhook, history, recordsctl) and a manager with the same rules
// (admin audit trail, webhook).
func TestRecordRulesLinks(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			be := e.Server.Backend()
			cat := be.Current().Catalog
			w := newExpandWorld(t, e)
			dept := w.refs("entity_departments")[0]

			// viewer is one reader of the links of its own records.
			type viewer struct {
				who, member, key string
				manager          bool
				hooks            *hookReceiver
				from             map[string]string // resource -> the viewer's record the links start from
				visible          map[string]string // target resource -> the viewer's record linked to
			}
			type roleRun struct {
				role    *model.Role
				cases   []linkCase
				hidden  map[string]string // target resource -> a record outside the role's record rule
				viewers []*viewer
				types   []string
			}
			var runs []*roleRun
			managers := map[string]any{}
			for _, role := range cat.Roles {
				if !slices.Contains(role.Permissions, "api.access") {
					continue
				}
				if cases := linkCases(cat, role); len(cases) > 0 {
					runs = append(runs, &roleRun{role: role, cases: cases, hidden: map[string]string{}})
					m := map[string]any{"label": role.Label + " (manager)", "permissions": append(slices.Clone(role.Permissions), "api.manage"),
						"resources": role.Resources, "record_rules": role.RecordRules}
					if len(role.FieldRules) > 0 {
						m["field_rules"] = role.FieldRules
					}
					managers[role.Name+"_links_manager"] = m
				}
			}
			if len(runs) == 0 {
				t.Fatal("no association's target is restricted by the record rule of a role with API access")
			}
			yml, _ := json.Marshal(map[string]any{"version": 1, "roles": managers})
			if _, err := be.Members.PutRoles(ctx, e.Workspace, "roles.yaml", yml, true); err != nil {
				t.Fatal(err)
			}

			// Every viewer's endpoint exists before the links are written, and takes their events only.
			for _, run := range runs {
				seen := map[string]bool{}
				for _, c := range run.cases {
					if !seen[c.r.Name] {
						seen[c.r.Name] = true
						run.types = append(run.types, c.r.Name+".linked", c.r.Name+".unlinked")
					}
				}
				for _, manager := range []bool{false, true} {
					v := &viewer{who: run.role.Name, manager: manager, from: map[string]string{}, visible: map[string]string{}}
					role, keyAccess := run.role.Name, "read"
					if manager {
						v.who, role, keyAccess = run.role.Name+"_links_manager", run.role.Name+"_links_manager", auth.AccessAdmin
					}
					v.member = e.NewMember(v.who+"-links@x.example", role, dept)
					v.key = e.NewKey(v.member, auth.KeyOptions{Access: keyAccess})
					v.hooks = newHookReceiver(t, time.Now)
					newEndpoint(t, e, v.member, v.hooks, dispatch.Input{EventTypes: &run.types})
					run.viewers = append(run.viewers, v)
				}
			}

			// The records: one of every target outside the role's record rule (the admin's, who is in no
			// department), and, for each viewer, its own record of every resource the links start from and
			// of every target.
			for _, run := range runs {
				for _, c := range run.cases {
					if run.hidden[c.target.Name] == "" {
						run.hidden[c.target.Name] = w.create(c.target, nil)
					}
					for _, v := range run.viewers {
						if v.from[c.r.Name] == "" {
							v.from[c.r.Name] = w.create(c.r, nil)
							setOwner(t, e, c.r, v.from[c.r.Name], v.member)
						}
						if v.visible[c.target.Name] == "" {
							v.visible[c.target.Name] = w.create(c.target, nil)
							setOwner(t, e, c.target, v.visible[c.target.Name], v.member)
						}
					}
				}
			}
			// The admin links each viewer's record to the viewer's target and to the hidden one, unlinks the
			// hidden one and links it again.
			var last, lastType string
			for _, run := range runs {
				for _, c := range run.cases {
					for _, v := range run.viewers {
						base := "/v1/" + c.r.Name + "/" + v.from[c.r.Name] + "/" + c.assoc.Name + "/"
						attrs := w.gen.Body(c.assoc.Attrs, w.refs, w.now)
						hidden := run.hidden[c.target.Name]
						e.Expect(e.Do("PUT", base+v.visible[c.target.Name], attrs), 200, "")
						e.Expect(e.Do("PUT", base+hidden, attrs), 200, "")
						e.Expect(e.Do("DELETE", base+hidden, nil), 200, "")
						e.Expect(e.Do("PUT", base+hidden, attrs), 200, "")
						last, lastType = v.from[c.r.Name], c.r.Name+".linked"
					}
				}
			}
			awaitEvent(t, e, "&type="+lastType, last, lastType)

			for _, run := range runs {
				// check holds the link entries of one viewer's record of r, as one place shows them, to what
				// the association lists show: per association, the link to the viewer's own target named, the
				// two links and the unlink of the hidden one withheld, the hidden id nowhere.
				check := func(where string, v *viewer, r string, items []linkItem) {
					t.Helper()
					shown, withheld := map[string]int{}, map[string]int{}
					want := 0
					for _, c := range run.cases {
						if c.r.Name != r {
							continue
						}
						want += 4
						for _, it := range items {
							if strings.Contains(it.raw, run.hidden[c.target.Name]) {
								t.Errorf("%s: %s's %s %s shows the id of a %s outside its record rule: %s", where, v.who, r, v.from[r], c.target.Name, it.raw)
							}
							if got, ok := it.values[c.assoc.Name]; ok {
								if got != run.hidden[c.target.Name] && (got != v.visible[c.target.Name] || it.unlink || len(it.withheld) > 0) {
									t.Errorf("%s: %s's %s %s: a link through %s shows %v (unlink %v, withheld %v), want its own %s %s", where, v.who, r, v.from[r], c.assoc.Name, got, it.unlink, it.withheld, c.target.Name, v.visible[c.target.Name])
								}
								shown[c.assoc.Name]++
							} else if slices.Equal(it.withheld, []string{c.assoc.Name}) {
								withheld[c.assoc.Name]++
							}
						}
						if shown[c.assoc.Name] != 1 || withheld[c.assoc.Name] != 3 {
							t.Errorf("%s: %s's %s %s: through %s %d links shown and %d withheld, want 1 and 3", where, v.who, r, v.from[r], c.assoc.Name, shown[c.assoc.Name], withheld[c.assoc.Name])
						}
					}
					if len(items) != want {
						var raws []string
						for _, it := range items {
							raws = append(raws, it.raw)
						}
						t.Errorf("%s: %s's %s %s: %d link entries, want %d:\n%s", where, v.who, r, v.from[r], len(items), want, strings.Join(raws, "\n"))
					}
				}
				byRecord := func(v *viewer, f func(r, id string) []linkItem, where string) {
					t.Helper()
					for r, id := range v.from {
						check(where, v, r, f(r, id))
					}
				}
				for _, v := range run.viewers {
					// Webhook payloads, as the endpoint's owner reads the events.
					fromIDs := map[string]bool{}
					for _, id := range v.from {
						fromIDs[id] = true
					}
					got := v.hooks.await(t, 20*time.Second, v.who+"'s webhook payloads", func(got []received) bool {
						n := 0
						for _, r := range got {
							if fromIDs[fmt.Sprint(r.event["record_id"])] {
								n++
							}
						}
						return n >= 4*len(run.cases)
					})
					byRecord(v, func(r, id string) []linkItem {
						var out []linkItem
						for _, d := range got {
							if d.event["record_id"] == id {
								if !d.verified {
									t.Errorf("%s's webhook payload of %s not verified", v.who, id)
								}
								out = append(out, linkItemOf(strings.TrimPrefix(fmt.Sprint(d.event["type"]), r+"."), d.event["data"], d.event["previous"], d.event["withheld"]))
							}
						}
						return out
					}, "webhook")
					if v.manager {
						// The admin API's audit trail.
						byRecord(v, func(r, id string) []linkItem {
							res := e.DoKey(v.key, "GET", "/v1/admin/audit?limit=1000&resource="+r+"&record_id="+id, nil)
							e.Expect(res, 200, "")
							return linkEntries(res.List())
						}, "admin audit trail")
						continue
					}
					// The association list and expand, which the other places follow: the viewer's own target
					// only, where the admin sees both.
					for _, c := range run.cases {
						path := "/v1/" + c.r.Name + "/" + v.from[c.r.Name]
						for who, key := range map[string]string{v.who: v.key, "admin": e.Key} {
							want := map[string]bool{v.visible[c.target.Name]: true}
							if who == "admin" {
								want[run.hidden[c.target.Name]] = true
							}
							list := e.DoKey(key, "GET", path+"/"+c.assoc.Name, nil)
							e.Expect(list, 200, "")
							ex := e.DoKey(key, "GET", path+"?expand="+c.assoc.Name, nil)
							e.Expect(ex, 200, "")
							exp := map[string]bool{}
							for _, id := range servertest.ExpandedIDs(t, ex.Data(), c.assoc.Name) {
								exp[id] = true
							}
							if got := linkedIDs(list); fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(exp) != fmt.Sprint(want) {
								t.Errorf("%s: %s lists %v and expands %v through %s, want %v", who, path, got, exp, c.assoc.Name, want)
							}
						}
					}
					// The change feed.
					evs, _ := feed(t, e, v.key, "start", "&type="+strings.Join(run.types, ","), 1000)
					byRecord(v, func(r, id string) []linkItem {
						var out []linkItem
						for _, ev := range evs {
							if ev["record_id"] == id {
								out = append(out, linkItemOf(strings.TrimPrefix(fmt.Sprint(ev["type"]), r+"."), ev["data"], ev["previous"], ev["withheld"]))
							}
						}
						return out
					}, "feed")
					// The record's history.
					byRecord(v, func(r, id string) []linkItem {
						res := e.DoKey(v.key, "GET", "/v1/"+r+"/"+id+"/history?page_size=100", nil)
						e.Expect(res, 200, "")
						return linkEntries(res.List())
					}, "history")
					// recordsctl audit list --as-member.
					a, err := be.Current().Records.MemberActor(ctx, e.Workspace, v.member)
					if err != nil {
						t.Fatal(err)
					}
					byRecord(v, func(r, id string) []linkItem {
						var rows []map[string]any
						if err := json.Unmarshal([]byte(auditJSON(auditAs(t, e, a, audit.Query{Resource: r, RecordID: id, Limit: 1000}))), &rows); err != nil {
							t.Fatal(err)
						}
						return linkEntries(rows)
					}, "recordsctl audit list --as-member")
				}
			}
		})
	}
}

// linkEntries are the link and unlink entries of an audit trail or history.
func linkEntries(entries []map[string]any) []linkItem {
	var out []linkItem
	for _, en := range entries {
		if a := fmt.Sprint(en["action"]); a == "link" || a == "unlink" {
			out = append(out, linkItemOf(a, en["changes"], en["previous"], en["withheld"]))
		}
	}
	return out
}
