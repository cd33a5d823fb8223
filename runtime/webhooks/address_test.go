package webhooks

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddress(t *testing.T) {
	t.Parallel()
	refused := []string{
		"127.0.0.1", "127.255.255.254", "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255",
		"172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.254",
		"169.254.169.254", // cloud metadata
		"169.254.0.1", "192.0.0.8", "192.0.2.10", "198.51.100.7", "203.0.113.9", "198.18.0.1", "198.19.255.255",
		"224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255", "192.88.99.1",
		"::", "::1", "fe80::1", "fe80::1%eth0", "febf::1", "fc00::1", "fd12:3456:789a::1", "ff02::1", "ff0e::1",
		"fec0::1", "2001:db8::1", "3fff::1", "2001::1", "2001:2::1", "2001:20::1", "100::1", "5f00::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0", "::ffff:192.168.0.1",
		"::127.0.0.1", "::10.0.0.1", "::8.8.8.8", // IPv4-compatible, deprecated: all refused
		"64:ff9b::127.0.0.1", "64:ff9b::10.1.2.3", "64:ff9b::169.254.169.254", "64:ff9b::a9fe:a9fe",
		"64:ff9b:1::8.8.8.8",
		"2002:7f00:1::1", "2002:c0a8:101::1", // 6to4 of 127.0.0.1 and 192.168.1.1
		"1::1", "4000::1", "e000::1", // outside global unicast
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1",
		"169.253.255.255", "192.0.1.1", "198.17.255.255", "198.20.0.1", "223.255.255.255", "11.0.0.1",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:80b::200e",
		"::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
	}
	for _, s := range refused {
		t.Run("refused "+s, func(t *testing.T) {
			t.Parallel()
			ip := netip.MustParseAddr(s)
			err := CheckAddress(ip)
			var re *RefusedAddressError
			if !errors.As(err, &re) {
				t.Fatalf("CheckAddress(%s) = %v, want a *RefusedAddressError", s, err)
			}
			if re.IP != ip || re.Why == "" || re.Range == "" {
				t.Fatalf("error %+v", re)
			}
		})
	}
	for _, s := range allowed {
		t.Run("allowed "+s, func(t *testing.T) {
			t.Parallel()
			if err := CheckAddress(netip.MustParseAddr(s)); err != nil {
				t.Fatalf("CheckAddress(%s) = %v, want nil", s, err)
			}
		})
	}
	if err := CheckAddress(netip.Addr{}); err == nil {
		t.Fatal("the zero Addr is allowed")
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	type want int
	const (
		ok want = iota
		invalid
		refusedAddr
	)
	for _, c := range []struct {
		url          string
		allowPrivate bool
		want         want
	}{
		{"https://example.com/hooks", false, ok},
		{"http://example.com:8080/a?b=c", false, ok},
		{"HTTPS://Example.COM/", false, ok},
		{"https://8.8.8.8/x", false, ok},
		{"https://[2606:4700:4700::1111]:443/", false, ok},
		{"http://localhost:8080/", false, ok}, // a name: checked when dialed
		{"http://127.0.0.1:8080/", false, refusedAddr},
		{"http://127.0.0.1:8080/", true, ok},
		{"http://10.1.2.3/", false, refusedAddr},
		{"http://169.254.169.254/latest/meta-data/", false, refusedAddr},
		{"http://[::1]/", false, refusedAddr},
		{"http://[::ffff:127.0.0.1]/", false, refusedAddr},
		{"http://[fe80::1%25eth0]/", false, refusedAddr},
		{"http://[64:ff9b::7f00:1]/", false, refusedAddr},
		{"http://0.0.0.0/", false, refusedAddr},
		{"http://127.0.0.1/", true, ok},
		{"http://192.168.0.10:9000/hook", true, ok},
		{"http://[::1]:9000/hook", true, ok},
		{"ftp://example.com/", false, invalid},
		{"file:///etc/passwd", false, invalid},
		{"javascript:alert(1)", false, invalid},
		{"//example.com/x", false, invalid},
		{"/relative", false, invalid},
		{"example.com/x", false, invalid},
		{"https:example.com", false, invalid},
		{"https://", false, invalid},
		{"https://user:pass@example.com/", false, invalid},
		{"https://user@example.com/", false, invalid},
		{"https://example.com/#frag", false, invalid},
		{"https://example.com/#", false, invalid},
		{"https://example.com:0/", false, invalid},
		{"https://example.com:65536/", false, invalid},
		{"https://example.com:99999999/", false, invalid},
		{"https://example.com:443/", false, ok},
		{"https://exa mple.com/", false, invalid},
		{"https://example.com/\x00", false, invalid},
		{"http://2130706433/", false, invalid},
		{"http://127.1/", false, invalid},
		{"http://0x7f.0.0.1/", false, invalid},
		{"http://0x7f000001/", false, invalid},
		{"http://example.123/", false, invalid},
		{"http://1.example.com/", false, ok},
		{"http://0xdead.example.com/", false, ok},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength-20), false, ok},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength-19), false, invalid},
		{"", false, invalid},
		{"   ", false, invalid},
		{"https:", false, invalid},
		// Only the characters RFC 3986 allows in a URL, as sent: the others percent-encoded.
		{`https://example.com/a"b`, false, invalid},
		{"https://example.com/<script>", false, invalid},
		{"https://example.com/a>b", false, invalid},
		{`https://example.com/x?q="><img src=x>`, false, invalid},
		{"https://example.com/a b", false, invalid},
		{`https://example.com/a\b`, false, invalid},
		{"https://example.com/a^b", false, invalid},
		{"https://example.com/a`b", false, invalid},
		{"https://example.com/a{b}", false, invalid},
		{"https://example.com/a|b", false, invalid},
		{"https://example.com/a\tb", false, invalid},
		{"https://example.com/a\x7fb", false, invalid},
		{"https://example.com/café", false, invalid},
		{"https://exämple.com/", false, invalid},
		{"http://127.0.0.1/<x>", true, invalid},
		{"https://example.com/a%22b%3Cc%3E?q=%22%3E%3Cimg%3E", false, ok},
		{"https://example.com/caf%C3%A9", false, ok},
		{"https://xn--exmple-cua.com/", false, ok},
		{"https://example.com/-._~:@!$&'()*+,;=/?q=a/b?c&d=e%20f", false, ok},
	} {
		name := c.url
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := c.url
			err := ValidateURL(url, c.allowPrivate)
			var re *RefusedAddressError
			got := ok
			switch {
			case errors.As(err, &re):
				got = refusedAddr
			case errors.Is(err, ErrInvalidURL):
				got = invalid
			case err != nil:
				t.Fatalf("ValidateURL(%q) = %v: neither refused nor invalid", url, err)
			}
			if got != c.want {
				t.Fatalf("ValidateURL(%q, %v) = %v", url, c.allowPrivate, err)
			}
			if err != nil && strings.Contains(err.Error(), "pass@") {
				t.Fatalf("error quotes the credentials: %v", err)
			}
		})
	}
}
