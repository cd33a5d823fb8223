package httpapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/workspace-records/records/runtime/auth"
)

// ParseProxies reads a comma-separated list of IP addresses and CIDR prefixes, as key allowlists are
// read (auth.ParseCIDR: IPv4-mapped entries become IPv4, zones are refused).
func ParseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := auth.ParseCIDR(part)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy: %w", err)
		}
		out = append(out, p)
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

// clientIP is the address a request came from. By default it is the socket's peer (unmapped, without
// its zone). When the peer is a trusted proxy, X-Forwarded-For is read from the right: the first
// address that is not itself a trusted proxy is the client (addresses further left were written by the
// client and prove nothing). A hop may carry a port (192.0.2.7:4711, [2001:db8::1]:443). A hop that is
// not an address ("unknown", garbage, an IPv6 zone), reached before any untrusted address, leaves the
// client unknown (false): the request is refused rather than taken for the proxy itself. When every hop
// is a trusted proxy, the leftmost one is the client. Other headers (X-Real-IP, True-Client-IP,
// Forwarded) are never read.
func clientIP(r *http.Request, proxies []netip.Prefix) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	addr := ap.Addr().Unmap().WithZone("")
	if !trusted(proxies, addr) {
		return addr, true
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	if len(hops) == 1 && strings.TrimSpace(hops[0]) == "" {
		return addr, true // no X-Forwarded-For: the proxy itself called
	}
	for i := len(hops) - 1; i >= 0; i-- {
		h, ok := parseHop(strings.TrimSpace(hops[i]))
		if !ok {
			return netip.Addr{}, false
		}
		if !trusted(proxies, h) {
			return h, true
		}
		addr = h
	}
	return addr, true
}

// parseHop reads one X-Forwarded-For entry: an address, optionally with a port.
func parseHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	if a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
