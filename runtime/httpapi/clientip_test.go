package httpapi

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// K10 at the unit level: which address an IP allowlist is checked against, for every shape of peer and
// X-Forwarded-For. The end-to-end half, through real sockets, is runtime/server TestClientAddress.
func TestClientIP(t *testing.T) {
	proxies, err := ParseProxies("127.0.0.1, 10.9.0.0/16, ::ffff:172.16.0.0/108, 2001:db8:ffff::/48")
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, 0, 1001)
	many = append(many, "198.51.100.9")
	for i := 0; i < 1000; i++ {
		many = append(many, "10.9.3.4")
	}
	cases := []struct {
		name, peer string
		xff        []string
		want       string // "" = unknown: the request is refused
	}{
		{"untrusted peer, no header", "192.0.2.7:5000", nil, "192.0.2.7"},
		{"untrusted peer spoofs XFF", "192.0.2.7:5000", []string{"10.1.2.3"}, "192.0.2.7"},
		{"untrusted peer spoofs a trusted proxy chain", "192.0.2.7:5000", []string{"10.1.2.3, 127.0.0.1"}, "192.0.2.7"},
		{"mapped untrusted peer", "[::ffff:192.0.2.7]:5000", []string{"10.1.2.3"}, "192.0.2.7"},
		{"IPv6 peer", "[2001:db8::1]:5000", []string{"10.1.2.3"}, "2001:db8::1"},
		{"zoned peer", "[fe80::1%eth0]:5000", nil, "fe80::1"},
		{"trusted peer, no header: the proxy itself", "127.0.0.1:5000", nil, "127.0.0.1"},
		{"trusted peer, one hop", "127.0.0.1:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"rightmost untrusted wins over a spoofed left", "127.0.0.1:5000", []string{"10.1.2.3, 203.0.113.5"}, "203.0.113.5"},
		{"trusted hops are skipped", "127.0.0.1:5000", []string{"10.1.2.3, 203.0.113.5, 10.9.0.7, 10.9.200.1"}, "203.0.113.5"},
		{"several header lines read as one list", "127.0.0.1:5000", []string{"10.1.2.3, 203.0.113.5", "10.9.0.7"}, "203.0.113.5"},
		{"mapped trusted peer", "[::ffff:10.9.1.1]:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"mapped-prefix proxy entry matches IPv4", "172.16.0.9:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"mapped hop", "127.0.0.1:5000", []string{"::ffff:203.0.113.5"}, "203.0.113.5"},
		{"IPv6 hop behind an IPv6 proxy", "[2001:db8:ffff::2]:443", []string{"2001:db8:1::5"}, "2001:db8:1::5"},
		{"hop with a port", "127.0.0.1:5000", []string{"203.0.113.5:4711"}, "203.0.113.5"},
		{"IPv6 hop with a port", "127.0.0.1:5000", []string{"[2001:db8:1::5]:443"}, "2001:db8:1::5"},
		{"spaces and tabs", "127.0.0.1:5000", []string{"  203.0.113.5\t,   10.9.0.7  "}, "203.0.113.5"},
		{"every hop trusted: the leftmost", "127.0.0.1:5000", []string{"10.9.0.1, 10.9.0.2"}, "10.9.0.1"},
		{"malformed rightmost hop: unknown", "127.0.0.1:5000", []string{"10.1.2.3, garbage"}, ""},
		{"unknown keyword: unknown", "127.0.0.1:5000", []string{"unknown"}, ""},
		{"empty hop: unknown", "127.0.0.1:5000", []string{"203.0.113.5, "}, ""},
		{"zoned hop: unknown", "127.0.0.1:5000", []string{"fe80::1%eth0"}, ""},
		{"hop with a CIDR: unknown", "127.0.0.1:5000", []string{"10.0.0.0/8"}, ""},
		{"malformed left of the client is never read", "127.0.0.1:5000", []string{"garbage, 203.0.113.5"}, "203.0.113.5"},
		{"1000 trusted hops", "127.0.0.1:5000", []string{strings.Join(many, ",")}, "198.51.100.9"},
		{"unparsable peer", "@unix", nil, ""},
	}
	for _, c := range cases {
		r := &http.Request{RemoteAddr: c.peer, Header: http.Header{}}
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		r.Header.Set("X-Real-IP", "10.1.1.1")
		r.Header.Set("True-Client-IP", "10.1.1.1")
		r.Header.Set("Forwarded", "for=10.1.1.1")
		got, ok := clientIP(r, proxies)
		switch {
		case c.want == "" && ok:
			t.Errorf("%s: client %s, want unknown", c.name, got)
		case c.want != "" && (!ok || got != netip.MustParseAddr(c.want)):
			t.Errorf("%s: client %s (%v), want %s", c.name, got, ok, c.want)
		}
	}
}

func TestParseProxies(t *testing.T) {
	got, err := ParseProxies(" 10.9.0.1/16 ,, ::ffff:172.16.0.0/108, 192.0.2.7 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.9.0.0/16", "172.16.0.0/12", "192.0.2.7/32"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, w := range want {
		if got[i].String() != w {
			t.Errorf("entry %d: %s, want %s", i, got[i], w)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "300.1.1.1", "fe80::1%eth0", "localhost", "10.0.0.1-10.0.0.9"} {
		if _, err := ParseProxies(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
