package httpapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ParseProxies reads a comma-separated list of IP addresses and CIDR prefixes.
func ParseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if strings.Contains(part, "/") {
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", part, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", part, err)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func trusted(proxies []netip.Prefix, a netip.Addr) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientIP is the address a request came from. By default it is the socket's peer. When the peer is a
// trusted proxy, X-Forwarded-For is read from the right: the first address that is not itself a trusted
// proxy is the client (addresses further left were written by the client and prove nothing).
func clientIP(r *http.Request, proxies []netip.Prefix) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	addr := ap.Addr().Unmap()
	if !trusted(proxies, addr) {
		return addr, true
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr, true // a malformed hop: trust nothing beyond the proxy itself
		}
		h = h.Unmap()
		if !trusted(proxies, h) {
			return h, true
		}
		addr = h
	}
	return addr, true
}
