package auth

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseCIDR reads one allowlist entry: an IP address (a single-address prefix) or a CIDR prefix. Host
// bits are cleared (10.1.2.3/8 is 10.0.0.0/8). An IPv4-mapped IPv6 entry (::ffff:10.0.0.0/104,
// ::ffff:192.0.2.7) becomes the IPv4 prefix it names, because client addresses are compared unmapped:
// kept as IPv6 it would match nothing. An entry with an IPv6 zone (fe80::1%eth0) is refused: a zone names
// an interface of this machine, not a caller. Trusted proxies are read the same way.
func ParseCIDR(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid IP address %q", s)
		}
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("invalid IP address %q: an allowlist entry cannot name an IPv6 zone", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// AllowsIP reports whether the key may be used from addr (any address when no allowlist is set). addr
// is compared unmapped (::ffff:10.1.2.3 is 10.1.2.3); an address with a zone or an invalid one matches
// no entry.
func (k *Key) AllowsIP(addr netip.Addr) bool {
	if len(k.AllowIPs) == 0 {
		return true
	}
	addr = addr.Unmap()
	for _, s := range k.AllowIPs {
		if p, err := ParseCIDR(s); err == nil && p.Contains(addr) {
			return true
		}
	}
	return false
}
