package webhooks

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// MaxURLLength is the longest endpoint URL [ValidateURL] accepts, in bytes.
const MaxURLLength = 2048

// ErrInvalidURL is wrapped by every refusal of [ValidateURL] but that of a refused address, which is a
// [*RefusedAddressError].
var ErrInvalidURL = errors.New("invalid webhook URL")

// RefusedAddressError is a refusal to connect to an address in a private or reserved range: by
// [ValidateURL] for a literal IP host, by the client of [NewClient] for the address a host name resolved
// to, before any byte is sent. Find it with [errors.As].
type RefusedAddressError struct {
	IP    netip.Addr // the address refused, as dialed (an IPv4-mapped form stays mapped)
	Range string     // the refused range it is in, e.g. "127.0.0.0/8"
	Why   string     // what the range is, e.g. "loopback"
}

// Error says which address was refused and why; it never names the host or URL it came from.
func (e *RefusedAddressError) Error() string {
	return fmt.Sprintf("refused address %s: %s (%s)", e.IP, e.Why, e.Range)
}

// refusedRange is one range no webhook may reach unless private addresses are allowed.
type refusedRange struct {
	prefix netip.Prefix
	why    string
}

// refusedV4 are the IPv4 ranges of the IANA special-purpose registry that are not globally reachable,
// plus multicast and the reserved 240/4 (which holds the limited broadcast address).
var refusedV4 = []refusedRange{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network" (and the unspecified address)`},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT, RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata services)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast (deprecated)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (and the broadcast address)"},
}

// refusedV6 are IPv6 ranges refused outright, named for the error. Beyond them every IPv6 address outside
// global unicast 2000::/3 is refused (the rest of the space is reserved, local or multicast), but for the
// forms that embed an IPv4 address a translator delivers to — IPv4-mapped ::ffff:0:0/96 and NAT64
// 64:ff9b::/96 — which are refused when the address they embed is; 6to4 2002::/16 is treated alike.
var refusedV6 = []refusedRange{
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (RFC 8215)"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking"},
	{netip.MustParsePrefix("2001:10::/28"), "ORCHID (deprecated)"},
	{netip.MustParsePrefix("2001:20::/28"), "ORCHIDv2"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (RFC 9637)"},
	{netip.MustParsePrefix("5f00::/16"), "segment routing SIDs (RFC 9602)"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// IPv6 ranges checked through the IPv4 address they embed (the low 32 bits; bits 16 to 47 for 6to4),
// and the global unicast range outside which the rest is refused.
var (
	nat64V6         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFourV6     = netip.MustParsePrefix("2002::/16")
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
)

// CheckAddress returns a [*RefusedAddressError] when ip is in a refused range: loopback, private
// (RFC 1918), CGNAT, link-local, unique-local, unspecified, multicast, broadcast and reserved, "this
// network", documentation and benchmarking ranges — and any IPv6 form embedding such an IPv4 address
// (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16); of IPv6 beyond those, everything
// outside global unicast 2000::/3, IPv4-compatible ::/96 included. It returns nil for an address that may
// be reached. An invalid address is refused.
func CheckAddress(ip netip.Addr) error {
	if r, refused := refusal(ip); refused {
		return &RefusedAddressError{IP: ip, Range: r.prefix.String(), Why: r.why}
	}
	return nil
}

// refusal returns the refused range ip is in.
func refusal(ip netip.Addr) (refusedRange, bool) {
	if !ip.IsValid() {
		return refusedRange{netip.Prefix{}, "not an IP address"}, true
	}
	ip = ip.WithZone("")
	if ip.Is4In6() {
		return refusalV4(ip.Unmap(), "IPv4-mapped ")
	}
	if ip.Is4() {
		return refusalV4(ip, "")
	}
	for _, r := range refusedV6 {
		if r.prefix.Contains(ip) {
			return r, true
		}
	}
	b := ip.As16()
	switch {
	case nat64V6.Contains(ip):
		return refusalV4(netip.AddrFrom4([4]byte(b[12:16])), "NAT64 of ")
	case sixToFourV6.Contains(ip):
		return refusalV4(netip.AddrFrom4([4]byte(b[2:6])), "6to4 of ")
	case !globalUnicastV6.Contains(ip):
		return refusedRange{globalUnicastV6, "outside IPv6 global unicast"}, true
	}
	return refusedRange{}, false
}

// refusalV4 returns the refused IPv4 range ip4 is in, its description prefixed with form.
func refusalV4(ip4 netip.Addr, form string) (refusedRange, bool) {
	for _, r := range refusedV4 {
		if r.prefix.Contains(ip4) {
			return refusedRange{r.prefix, form + r.why}, true
		}
	}
	return refusedRange{}, false
}

// ValidateURL checks an endpoint URL when it is saved: an absolute http or https URL with a host, no
// user information, no fragment, at most [MaxURLLength] bytes, and a port, if any, from 1 to 65535. A
// host that is not an IP address yet ends in a numeric label ("2130706433", "127.1", "0x7f.1") is refused
// as an ambiguous IPv4 form some resolvers would read as one.
//
// The URL is stored and shown as sent, so it must be in its encoded form: only the characters RFC 3986
// allows in a URL — letters, digits, "-._~", ":/?#[]@", "!$&'()*+,;=" and "%" of a percent-encoding.
// A space, '"', '<', '>', '\', '^', '`', '{', '|', '}', a control character or a character outside
// ASCII is refused, to be sent percent-encoded ("%22" for '"'; a host in its IDNA ASCII form, xn--…):
// such a URL is not one a receiver's address needs, and every page or log that shows it as text would
// have to escape it.
//
// Unless allowPrivate, a literal IP host in a refused range (see [CheckAddress]) is refused at once with
// a [*RefusedAddressError]; a host name is not resolved here — its addresses are checked when the client
// of [NewClient] dials them, each time. Every other refusal wraps [ErrInvalidURL].
func ValidateURL(raw string, allowPrivate bool) error {
	if err := checkURL(raw, allowPrivate); err != nil {
		return err
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; !urlByte[c] {
			return fmt.Errorf("%w: %s at byte %d: send it percent-encoded", ErrInvalidURL, describeByte(c), i)
		}
	}
	return nil
}

// urlByte holds the bytes RFC 3986 allows in a URL: unreserved, reserved (gen-delims and sub-delims) and
// '%' (url.Parse checks each percent-encoding).
var urlByte = func() (set [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=%") {
		set[c] = true
	}
	return set
}()

// describeByte names a byte ValidateURL refuses.
func describeByte(c byte) string {
	switch {
	case c < 0x20 || c == 0x7f:
		return "a control character"
	case c == ' ':
		return "a space"
	case c >= 0x80:
		return "a character outside ASCII (a host in its IDNA ASCII form, xn--…)"
	}
	return fmt.Sprintf("%q (%%%02X)", rune(c), c)
}

// checkURL is ValidateURL but for the characters: what a delivery checks, so that an endpoint saved
// before ValidateURL refused them is still delivered to (the client sends them percent-encoded).
func checkURL(raw string, allowPrivate bool) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidURL, len(raw), MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, which may carry credentials: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: scheme %q, want http or https", ErrInvalidURL, clip(u.Scheme, 16))
	case u.Opaque != "" || u.Host == "":
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	case u.User != nil:
		return fmt.Errorf("%w: user information in the URL", ErrInvalidURL)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%w: a fragment", ErrInvalidURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	}
	if p := u.Port(); p != "" {
		if n, ok := parsePort(p); !ok || n == 0 {
			return fmt.Errorf("%w: port %q", ErrInvalidURL, clip(p, 16))
		}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		if endsInNumber(host) {
			return fmt.Errorf("%w: host %q ends in a number but is not an IP address", ErrInvalidURL, clip(host, 64))
		}
		return nil
	}
	if !allowPrivate {
		return CheckAddress(ip)
	}
	return nil
}

// parsePort parses a decimal port of at most 5 digits.
func parsePort(p string) (int, bool) {
	if len(p) > 5 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(p) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= 65535
}

// endsInNumber reports whether the last label of a host name (a trailing dot ignored) is a decimal or
// 0x-hexadecimal number, as the WHATWG URL standard's "ends in a number" check: such a host is an IPv4
// address to browsers and to the C library's inet_aton, never a registrable name.
func endsInNumber(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}
