package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// BenchmarkRequestPath measures, on each backend and in one run, what one GET of a record by id costs at
// each layer: raw SQL by primary key, the record service (SQL + row conversion), the authentication and
// permission path alone (key lookup, plan, role, policy), and the whole HTTP request through a real
// listener. Compare the ns/op of auth with those of the bare get.
func BenchmarkRequestPath(b *testing.B) {
	for _, backend := range servertest.Backends {
		b.Run(string(backend), func(b *testing.B) {
			e := servertest.Start(b, backend, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			created := e.Do("POST", "/v1/companies", map[string]any{"name": "Bench Co", "industry": "software", "employee_count": 42})
			id := created.Data()["id"].(string)
			r, _ := be.Current().Catalog.Resource("companies")
			d := be.Store.Dialect()

			b.Run("raw_sql_get", func(b *testing.B) {
				stmt := d.Bind("SELECT * FROM "+sqlgen.Quote(r.Table)+" WHERE workspace_id = ? AND id = ?", e.Workspace, id)
				// Scoped like every request, so that row-level security admits the row (PostgreSQL).
				wctx := store.WithWorkspace(ctx, e.Workspace)
				for i := 0; i < b.N; i++ {
					found, err := store.QueryOne(wctx, be.Store, stmt, func([]any) error { return nil })
					if err != nil || !found {
						b.Fatal("raw get found nothing", err)
					}
				}
			})
			b.Run("service_get", func(b *testing.B) {
				a := records.Actor{Workspace: e.Workspace, Member: e.Member}
				for i := 0; i < b.N; i++ {
					c, err := be.Current().Records.Collection(ctx, a, r, "")
					if err != nil {
						b.Fatal(err)
					}
					if _, err := be.Current().Records.Get(ctx, c, id, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("auth_and_permissions", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					p, err := be.Directory.Authenticate(ctx, e.Key)
					if err != nil {
						b.Fatal(err)
					}
					if err := p.Authorize(r, false); err != nil {
						b.Fatal(err)
					}
					_ = p.Policy(r)
				}
			})
			b.Run("http_get", func(b *testing.B) {
				client := &http.Client{}
				req, _ := http.NewRequest("GET", e.URL+"/v1/companies/"+id, nil)
				req.Header.Set("Authorization", "Bearer "+e.Key)
				for i := 0; i < b.N; i++ {
					res, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != 200 {
						b.Fatal(res.Status)
					}
				}
			})
		})
	}
}

// BenchmarkLimiter is the cost of one rate-limit decision over three windows: in process, and through
// Redis (one script call).
func BenchmarkLimiter(b *testing.B) {
	windows := []limits.Window{{Key: "k:m", Limit: 1 << 40, Period: time.Minute}, {Key: "k:h", Limit: 1 << 40, Period: time.Hour}, {Key: "w:m", Limit: 1 << 40, Period: time.Minute}}
	ctx := context.Background()
	b.Run("local", func(b *testing.B) {
		l := limits.NewLocal()
		for i := 0; i < b.N; i++ {
			if _, err := l.Allow(ctx, time.Now(), windows); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("redis", func(b *testing.B) {
		client, err := limits.ParseRedisURL("redis://127.0.0.1:6379/0")
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		if err := client.Ping(ctx).Err(); err != nil {
			b.Skipf("Redis not reachable: %v", err)
		}
		l := limits.NewRedis(client, "records-bench:", slog.New(slog.NewTextHandler(io.Discard, nil)))
		for i := 0; i < b.N; i++ {
			if _, err := l.Allow(ctx, time.Now(), windows); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCreate compares a create with and without an Idempotency-Key, through HTTP, on each backend.
func BenchmarkCreate(b *testing.B) {
	for _, backend := range servertest.Backends {
		b.Run(string(backend), func(b *testing.B) {
			e := servertest.Start(b, backend, servertest.Options{})
			client := &http.Client{}
			post := func(i int, key string) { postCompany(b, client, e, i, key) }
			b.Run("plain", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					post(i, "")
				}
			})
			b.Run("idempotency_key", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					post(i, "bench-"+strconv.Itoa(i)+"-"+strconv.Itoa(b.N))
				}
			})
		})
	}
}

// BenchmarkHookedWrite compares a create through HTTP with one plugin Before hook (a separate process
// over gRPC) and the same create on a server whose definitions name no hook.
func BenchmarkHookedWrite(b *testing.B) {
	dir := servertest.PluginsDir(b)
	buildNameRules(b, dir, "forbidden")
	hooked := servertest.DefinitionsWithHooks(b, "companies", "name-rules")
	for _, backend := range servertest.Backends {
		b.Run(string(backend), func(b *testing.B) {
			for _, c := range []struct{ name, defs string }{{"no_hook", servertest.DefinitionsDir()}, {"one_hook", hooked}} {
				e := servertest.Start(b, backend, servertest.Options{DefinitionsDir: c.defs, PluginsDir: dir})
				client := &http.Client{}
				b.Run(c.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						postCompany(b, client, e, i, "")
					}
				})
			}
		})
	}
}

// postCompany creates one company through HTTP (with an Idempotency-Key when key is set), failing b
// unless it is created.
func postCompany(b *testing.B, client *http.Client, e *servertest.Env, i int, key string) {
	req, _ := http.NewRequest("POST", e.URL+"/v1/companies", strings.NewReader(`{"name":"Bench `+strconv.Itoa(i)+`"}`))
	req.Header.Set("Authorization", "Bearer "+e.Key)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		b.Fatal(res.Status)
	}
}
