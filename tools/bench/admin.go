package main

// The administration phase (issue 24): what a console session costs against a key on the same route
// (a session is read from the database on every request, a key is remembered), and what a page of the
// admin API's audit trail costs against a page of records of the same size, on the same server, in
// interleaved rounds (runPair).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// adminPairs are the comparisons of the phase and their targets.
func (b *bench) adminPairs(session, csrf, adminKey string) []readPair {
	bySession := func(req *http.Request) {
		req.Header.Del("Authorization")
		req.Header.Set("Cookie", "records_session="+session)
		req.Header.Set("X-CSRF-Token", csrf)
	}
	byAdminKey := func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+adminKey) }
	return []readPair{
		{name: "GET /v1/me/keys: session vs key", with: "/v1/me/keys", without: "/v1/me/keys", withAuth: bySession, limit: 1.5},
		{name: "admin audit page vs record page (50)", with: "/v1/admin/audit?limit=50", without: "/v1/companies?page_size=50",
			withAuth: byAdminKey, limit: 2},
	}
}

// runAdmin signs the bench's member in to the console (recordsctl console-link, POST /console/session),
// makes an admin key, and measures every pair at every concurrency.
func (b *bench) runAdmin(ctx context.Context) error {
	// The planner's statistics of the audit trail the seed just wrote, as autovacuum would gather them
	// on a running database (without them PostgreSQL sorts the workspace's entries for every page).
	if _, err := b.raw.exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	link, err := ctl(ctx, b.o, b.dsn, "console-link", "--member", b.member, "--url", b.apiURL(""))
	if err != nil {
		return fmt.Errorf("console link: %w", err)
	}
	_, token, _ := strings.Cut(link["url"].(string), "#sign-in=")
	body, _ := json.Marshal(map[string]string{"token": token})
	req, _ := http.NewRequestWithContext(ctx, "POST", b.apiURL("/console/session"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var signedIn struct {
		Data struct {
			CSRF string `json:"csrf_token"`
		} `json:"data"`
	}
	if res.StatusCode != 200 || json.Unmarshal(data, &signedIn) != nil || len(res.Cookies()) != 1 {
		return fmt.Errorf("sign in: %d %s", res.StatusCode, data)
	}
	k, err := ctl(ctx, b.o, b.dsn, "key", "create", "--member", b.member, "--access", "admin")
	if err != nil {
		return fmt.Errorf("admin key: %w", err)
	}
	// The record page has 50 records; the audit trail holds at least the seed's imports.
	for _, p := range b.adminPairs(res.Cookies()[0].Value, signedIn.Data.CSRF, k["secret"].(string)) {
		for _, c := range b.o.conc {
			p.c, p.ratios = c, nil
			if err := b.runPair(ctx, &p); err != nil {
				return err
			}
			b.rep.admin = append(b.rep.admin, p)
		}
	}
	return nil
}

func renderAdmin(r *report) string {
	if len(r.admin) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nAdministration (issue 24): each request against its counterpart, same server, interleaved rounds:\n\n")
	b.WriteString("| read | c | with req/s | with p50 | with p99 | without req/s | without p50 | p50 with/without | target |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, p := range r.admin {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %.0f | %s | %s | ≤ %.1f× |\n", p.name, p.c, p.a.Rate(), ms(p.a.P50), ms(p.a.P99),
			p.b.Rate(), ms(p.b.P50), spread(p.ratios), p.limit)
	}
	return b.String()
}

// adminTargets are issue 24's verdicts on one backend.
func adminTargets(r *report) []verdict {
	var out []verdict
	for _, p := range r.admin {
		out = append(out, verdict{name: fmt.Sprintf("[%s] %s p50 ≤ %.1f×, c=%d", r.backend, p.name, p.limit, p.c),
			got: spread(p.ratios), ok: len(p.ratios) > 0 && medianOf(p.ratios) <= p.limit})
	}
	return out
}
