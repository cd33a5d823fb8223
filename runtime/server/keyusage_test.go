package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestKeyLastUsed: a key's last use and client address are kept in memory per request and written by
// FlushUsage, once per key per flush, never backwards: GET /v1/me shows them at once (this request
// included), the stored key (recordsctl key list) after the flush. Behind a trusted proxy the address is
// the forwarded client.
func TestKeyLastUsed(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{TrustedProxies: "127.0.0.1"})
			ctx := context.Background()
			be := e.Server.Backend()
			dir := be.Directory
			k, secret, err := dir.CreateKey(ctx, e.Member, auth.KeyOptions{Access: "read", ExpiresIn: 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			stored := func() auth.Key {
				t.Helper()
				keys, err := dir.ListKeys(ctx, e.Workspace)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range keys {
					if x.ID == k.ID {
						return x
					}
				}
				t.Fatalf("key %s not listed", k.ID)
				return auth.Key{}
			}
			if s := stored(); s.LastUsedAt != nil || s.LastUsedIP != nil {
				t.Fatalf("a new key has a last use: %v %v", s.LastUsedAt, s.LastUsedIP)
			}
			// Whatever flushes the setup left, then 30 requests: none of them writes the key.
			if _, err := dir.FlushUsage(ctx); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for range 30 {
				e.Expect(e.DoKey(secret, "GET", "/v1/companies", nil, "X-Forwarded-For", "203.0.113.7"), 200, "")
			}
			if s := stored(); s.LastUsedAt != nil {
				t.Fatalf("last_used_at written by a request (%v), want only by the flush", s.LastUsedAt)
			}
			me := e.DoKey(secret, "GET", "/v1/me", nil, "X-Forwarded-For", "203.0.113.7")
			e.Expect(me, 200, "")
			key, _ := me.Data()["key"].(map[string]any)
			at, err := time.Parse(time.RFC3339Nano, asString(key["last_used_at"]))
			if err != nil || at.Before(start.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) || key["last_used_ip"] != "203.0.113.7" {
				t.Errorf("GET /v1/me key: last_used_at %v, last_used_ip %v; want about now, 203.0.113.7", key["last_used_at"], key["last_used_ip"])
			}

			n, err := dir.FlushUsage(ctx)
			if err != nil || n != 1 {
				t.Fatalf("flush: %d keys, %v; want 1 (the only key used)", n, err)
			}
			s := stored()
			if s.LastUsedAt == nil || s.LastUsedAt.Before(start.Add(-time.Second)) || s.LastUsedAt.After(time.Now().Add(time.Second)) || s.LastUsedIP == nil || *s.LastUsedIP != "203.0.113.7" {
				t.Fatalf("stored after the flush: %v %v", s.LastUsedAt, s.LastUsedIP)
			}
			if n, err := dir.FlushUsage(ctx); err != nil || n != 0 {
				t.Errorf("a flush with no use since: %d keys written, %v", n, err)
			}

			// Replicas flush in any order: a use another server saw later (here, an hour ahead) is never
			// replaced by an earlier one.
			replica := auth.NewDirectory(be.Store, be.Current().Catalog, nil)
			later := time.Now().Add(time.Hour)
			replica.Touch(&s, "198.51.100.1", later)
			e.Expect(e.DoKey(secret, "GET", "/v1/me", nil), 200, "")
			if _, err := replica.FlushUsage(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := dir.FlushUsage(ctx); err != nil {
				t.Fatal(err)
			}
			if s := stored(); s.LastUsedAt == nil || !s.LastUsedAt.Equal(later.UTC().Truncate(time.Microsecond)) || s.LastUsedIP == nil || *s.LastUsedIP != "198.51.100.1" {
				t.Errorf("after an earlier use was flushed last: %v %v, want the later %v from 198.51.100.1", s.LastUsedAt, derefString(s.LastUsedIP), later)
			}
		})
	}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

func derefString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
