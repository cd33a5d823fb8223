package main

import (
	"strings"
	"testing"
	"time"
)

func TestReadsVerdictsAndReport(t *testing.T) {
	r := &report{backend: "postgres", readsSetup: &readsSetup{contacts: 1000, deals: 1000, links: 2000, took: 3 * time.Second}}
	r.reads = []readPair{
		{name: "expand=company,contacts", c: 8, limit: 2, ratios: []float64{1.4, 1.6, 2.5},
			a: result{N: 100, Elapsed: time.Second, P50: 3 * time.Millisecond}, b: result{N: 200, Elapsed: time.Second, P50: 2 * time.Millisecond}},
		{name: "count=estimated", c: 8, limit: 1.2, ratios: []float64{1.3, 1.25, 1.1}},
		{name: "filter contacts.email (association)", c: 1, limit: 3},
	}
	got := map[string]verdict{}
	for _, v := range readsTargets(r) {
		got[v.name] = v
	}
	for name, want := range map[string]bool{
		"[postgres] expand=company,contacts p50 ≤ 2.0× the list without it, c=8":             true,  // median 1.6
		"[postgres] count=estimated p50 ≤ 1.2× the list without it, c=8":                     false, // median 1.25
		"[postgres] filter contacts.email (association) p50 ≤ 3.0× the list without it, c=1": false, // not measured
	} {
		if v, ok := got[name]; !ok || v.ok != want {
			t.Errorf("%s: %+v (present %v), want %v", name, v, ok, want)
		}
	}
	text := renderReads(r)
	for _, s := range []string{"1000 contacts and 1000 deals", "2000 links deal↔contact, two per deal but the last", "| expand=company,contacts | 8 | 100 | 3.00 ms |", "1.60× (1.40–2.50) | ≤ 2.0× |"} {
		if !strings.Contains(text, s) {
			t.Errorf("report lacks %q:\n%s", s, text)
		}
	}
	if renderReads(&report{}) != "" {
		t.Error("nothing measured: no section")
	}
}

func TestReadsRows(t *testing.T) {
	for companies, want := range map[int]int{1000: 1000, 100_000: 10_000, 1_000_000: 100_000, 5_000_000: 100_000} {
		if got := readsRows(companies); got != want {
			t.Errorf("readsRows(%d) = %d, want %d", companies, got, want)
		}
	}
}
