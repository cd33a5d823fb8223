package auth

import (
	"net/netip"
	"testing"
)

// K10: allowlist entries and which addresses they admit, at the edges.
func TestAllowsIP(t *testing.T) {
	cases := []struct {
		entries []string
		allowed []string
		refused []string
	}{
		{[]string{"10.0.0.0/8"}, []string{"10.0.0.0", "10.255.255.255", "::ffff:10.1.2.3"}, []string{"9.255.255.255", "11.0.0.0", "::a00:1", "fe80::1"}},
		{[]string{"192.0.2.7"}, []string{"192.0.2.7", "::ffff:192.0.2.7"}, []string{"192.0.2.6", "192.0.2.8"}},
		{[]string{"192.0.2.6/31"}, []string{"192.0.2.6", "192.0.2.7"}, []string{"192.0.2.5", "192.0.2.8"}},
		{[]string{"10.1.2.3/8"}, []string{"10.200.0.1"}, []string{"11.0.0.1"}}, // host bits cleared
		{[]string{"2001:db8::/32"}, []string{"2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"}, []string{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::", "32.1.13.184"}},
		{[]string{"::1"}, []string{"::1"}, []string{"127.0.0.1", "::2"}},
		{[]string{"::ffff:10.0.0.0/104"}, []string{"10.0.0.1", "::ffff:10.9.9.9"}, []string{"11.0.0.1"}}, // mapped entries name IPv4
		{[]string{"::ffff:192.0.2.7"}, []string{"192.0.2.7"}, []string{"192.0.2.8"}},
		{[]string{"0.0.0.0/0"}, []string{"0.0.0.0", "255.255.255.255"}, []string{"::1", "2001:db8::1"}},
		{[]string{"::/0"}, []string{"::1", "2001:db8::1"}, []string{"10.0.0.1"}}, // IPv4 is not inside IPv6's ::/0
		{[]string{"198.51.100.0/24", "2001:db8::/64"}, []string{"198.51.100.200", "2001:db8::9"}, []string{"198.51.101.1", "2001:db8:0:1::1"}},
	}
	for _, c := range cases {
		k := &Key{AllowIPs: c.entries}
		for _, a := range c.allowed {
			if !k.AllowsIP(netip.MustParseAddr(a)) {
				t.Errorf("%v refuses %s", c.entries, a)
			}
		}
		for _, a := range c.refused {
			if k.AllowsIP(netip.MustParseAddr(a)) {
				t.Errorf("%v allows %s", c.entries, a)
			}
		}
		if k.AllowsIP(netip.Addr{}) {
			t.Errorf("%v allows the invalid address", c.entries)
		}
		if k.AllowsIP(netip.MustParseAddr("fe80::1%eth0")) {
			t.Errorf("%v allows a zoned address", c.entries)
		}
	}
	if !(&Key{}).AllowsIP(netip.MustParseAddr("203.0.113.1")) {
		t.Error("a key without an allowlist refuses an address")
	}
}

// Entries a key or the trusted proxies cannot hold.
func TestParseCIDRRefuses(t *testing.T) {
	for _, s := range []string{"", " ", "10.0.0.0/33", "::1/129", "10.0.0.0/-1", "300.1.1.1", "10.0.0", "10.0.0.0/8/8",
		"abc", " 10.0.0.1", "10.0.0.1 ", "fe80::1%eth0", "fe80::/10%eth0", "10.0.0.1:80", "[::1]", "0x0a000001"} {
		if p, err := ParseCIDR(s); err == nil {
			t.Errorf("%q accepted as %s", s, p)
		}
	}
}
