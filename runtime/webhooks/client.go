package webhooks

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Defaults of [Options].
const (
	// DefaultTimeout bounds a whole attempt: connecting, sending, and reading the answer. The
	// specification recommends 15 to 30 seconds.
	DefaultTimeout = 15 * time.Second
	// DefaultDialTimeout bounds one TCP connection attempt.
	DefaultDialTimeout = 5 * time.Second
)

// Options configures the client of [NewClient].
type Options struct {
	// AllowPrivate lets the client connect to refused ranges (see [CheckAddress]): for tests and for
	// deployments whose receivers are on the private network. Off, every connection to such an
	// address fails with a [*RefusedAddressError] before it is made.
	AllowPrivate bool
	// Timeout bounds a whole request, reading the answer included; 0 means [DefaultTimeout].
	Timeout time.Duration
	// DialTimeout bounds one TCP connection attempt; 0 means [DefaultDialTimeout].
	DialTimeout time.Duration
	// TLSConfig, if not nil, is the TLS configuration of https connections (tests trust their own
	// certificate authority with it); nil uses the system roots.
	TLSConfig *tls.Config
}

// NewClient returns the HTTP client of webhook deliveries. It never uses a proxy (HTTP_PROXY and the
// like are ignored: a proxy would dial on the client's behalf, past the address check), does not follow
// redirects (a 3xx answer is returned as the answer: the specification counts it a failure), and dials
// through a [net.Dialer] whose Control function checks the IP address of every connection it is about to
// open — after DNS resolution, for each address tried — and, unless o.AllowPrivate, refuses one in a
// refused range with a [*RefusedAddressError] (wrapped in the *url.Error the client returns).
//
// Connections are kept alive and reused per host, as by [http.Transport]; each was checked when dialed.
// The client is safe for concurrent use; make one per worker, not one per delivery.
func NewClient(o Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	dialer := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		dialer.Control = controlAddress
	}
	var tlsConfig *tls.Config
	if o.TLSConfig != nil {
		tlsConfig = o.TLSConfig.Clone()
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    o.DialTimeout,
		ResponseHeaderTimeout:  o.Timeout,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// controlAddress is the dialer's Control function: it runs after the socket is made and before it
// connects, with the address being dialed ("ip:port", a resolved address, never a name).
func controlAddress(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook dial %s %s: %w", network, address, err)
	}
	return CheckAddress(ap.Addr())
}
