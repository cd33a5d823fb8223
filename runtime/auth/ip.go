package auth

import (
	"fmt"
	"net/netip"
	"strings"
)

func parseCIDR(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid IP address %q", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// AllowsIP reports whether the key may be used from addr (any address when no allowlist is set).
func (k *Key) AllowsIP(addr netip.Addr) bool {
	if len(k.AllowIPs) == 0 {
		return true
	}
	addr = addr.Unmap()
	for _, s := range k.AllowIPs {
		if p, err := parseCIDR(s); err == nil && p.Contains(addr) {
			return true
		}
	}
	return false
}
