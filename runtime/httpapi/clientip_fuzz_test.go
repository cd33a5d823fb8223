package httpapi

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// FuzzClientIP feeds arbitrary trusted-proxy lists, peer addresses and X-Forwarded-For headers through
// ParseProxies and clientIP. Nothing may panic. An accepted proxy list reads back the same from its own
// text. The client is the peer itself unless the peer is a trusted proxy; behind trusted proxies it is
// the peer or a hop every hop right of which is a well-formed trusted proxy (addresses a client wrote
// left of an untrusted one prove nothing), never an IPv4-mapped address, and the client is unknown
// only when some hop is not a plain address (no port, no zone).
func FuzzClientIP(f *testing.F) {
	for _, c := range [][3]string{
		{"", "203.0.113.9:4711", "198.51.100.1"},
		{"10.0.0.0/8", "10.0.0.2:80", "198.51.100.1, 10.0.0.3"},
		{"10.0.0.0/8", "10.0.0.2:80", "1.2.3.4, 198.51.100.1, 10.0.0.3"},
		{"10.0.0.0/8", "10.0.0.2:80", "10.0.0.4,10.0.0.3"},
		{"10.0.0.0/8", "10.0.0.2:80", "junk, 10.0.0.3"},
		{"10.0.0.0/8", "10.0.0.2:80", "198.51.100.1, junk"},
		{"10.0.0.0/8,::1", "[::1]:80", "::ffff:198.51.100.7"},
		{"::ffff:10.0.0.0/104", "10.0.0.2:80", "198.51.100.1"},
		{"2001:db8::/32", "[2001:db8::1%eth0]:80", "2001:db8::2, fe80::1%eth0"},
		{"0.0.0.0/0", "127.0.0.1:1", ""},
		{"10.0.0.1/33", "bad", ",,,"},
	} {
		f.Add(c[0], c[1], c[2])
	}
	f.Fuzz(func(t *testing.T, proxyList, remote, xff string) {
		proxies, err := ParseProxies(proxyList)
		if err != nil {
			return
		}
		var text []string
		for _, p := range proxies {
			if p != p.Masked() {
				t.Fatalf("proxy %s is not masked", p)
			}
			text = append(text, p.String())
		}
		back, err := ParseProxies(strings.Join(text, ","))
		if err != nil || len(back) != len(proxies) {
			t.Fatalf("proxies %v read back as %v, %v", proxies, back, err)
		}
		for i := range back {
			if back[i] != proxies[i] {
				t.Fatalf("proxy %s read back as %s", proxies[i], back[i])
			}
		}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		if xff != "" {
			r.Header["X-Forwarded-For"] = strings.Split(xff, "\n")
		}
		got, ok := clientIP(r, proxies)
		peer, err := netip.ParseAddrPort(remote)
		if err != nil {
			if ok {
				t.Fatalf("peer %q is no address, yet the client is %s", remote, got)
			}
			return
		}
		addr := peer.Addr().Unmap().WithZone("")
		if !trusted(proxies, addr) {
			if !ok || got != addr {
				t.Fatalf("untrusted peer %s: client %s (%v) taken from X-Forwarded-For %q", addr, got, ok, xff)
			}
			return
		}
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		if !ok {
			// Refused: only for a hop that is not a plain address.
			for _, h := range hops {
				if a, err := netip.ParseAddr(strings.TrimSpace(h)); err != nil || a.Zone() != "" {
					return
				}
			}
			t.Fatalf("peer %s, X-Forwarded-For %q of plain addresses: no client", addr, xff)
		}
		if got.Is4In6() {
			t.Fatalf("client %s is an IPv4-mapped address", got)
		}
		if got == addr {
			return
		}
		// Taken from a hop: every hop right of it is a trusted proxy.
		for i := len(hops) - 1; i >= 0; i-- {
			h, ok := hop(hops[i])
			if ok && h == got {
				return
			}
			if !ok || !trusted(proxies, h) {
				t.Fatalf("peer %s, proxies %v, X-Forwarded-For %q: client %s lies left of hop %q, which is no trusted proxy", addr, proxies, xff, got, hops[i])
			}
		}
		t.Fatalf("peer %s, X-Forwarded-For %q: client %s is neither the peer nor a hop", addr, xff, got)
	})
}

// hop reads an X-Forwarded-For entry leniently: an address, with or without a port, unmapped.
func hop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}
