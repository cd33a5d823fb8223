package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// clientAddressMatrix (K10, end to end): IP allowlists against real peers. Linux routes all of
// 127.0.0.0/8 to loopback, so a client can bind 127.0.0.2… as its source address and the server sees
// each as a distinct peer; a second listener on [::1] gives an IPv6 peer. e's server must trust proxy
// (a 127.0.0.x address other than 127.0.0.1–.6) and 10.9.0.0/16 as proxies: requests from proxy have
// their X-Forwarded-For read from the right, requests from any other peer have it (and X-Real-IP,
// True-Client-IP, Forwarded…) ignored. newKey makes a key of e's admin with an IP allowlist.
func clientAddressMatrix(t *testing.T, e *servertest.Env, proxy string, newKey func(allow ...string) string) {
	// Without ::1 the IPv6 rows cannot run. Outside CI that is a skip (a laptop with IPv6 off); in CI
	// it fails, so the matrix is never skipped unseen (.ci/run turns IPv6 on for lo where it is off).
	v6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no IPv6 loopback with CI=true (sysctl -w net.ipv6.conf.lo.disable_ipv6=0): %v", err)
		}
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ts6 := &httptest.Server{Listener: v6, Config: &http.Server{Handler: e.Server.Handler()}}
	ts6.Start()
	defer ts6.Close()
	base4 := e.URL
	base6 := ts6.URL
	port4 := base4[strings.LastIndex(base4, ":"):]

	clients := map[string]*http.Client{}
	from := func(src string) *http.Client {
		if c, ok := clients[src]; ok {
			return c
		}
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}}
		clients[src] = c
		return c
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	type call struct {
		name, src, key string
		header         http.Header
		want           int
	}
	send := func(c call) {
		t.Helper()
		base := "http://127.0.0.1" + port4
		if strings.Contains(c.src, ":") {
			base = base6
		}
		req, _ := http.NewRequest("GET", base+"/v1/me", nil)
		for k, v := range c.header {
			req.Header[k] = v
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		res, err := from(c.src).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var env struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &env)
		if res.StatusCode != c.want || (c.want == 403 && env.Error.Code != "ip_not_allowed") {
			t.Errorf("%s (from %s, %v): %d %s %s, want %d", c.name, c.src, c.header, res.StatusCode, env.Error.Code, env.Error.Message, c.want)
		}
	}
	key := newKey
	xff := func(v ...string) http.Header { return http.Header{"X-Forwarded-For": v} }

	edges := key("127.0.0.4/31")          // 127.0.0.4 and .5
	single := key("127.0.0.3")            // one address
	office := key("10.0.0.0/8")           // an address the client will claim
	mapped := key("::ffff:127.0.0.4/127") // written as IPv4-mapped IPv6: the same /31
	loop6 := key("::1")
	v6net := key("::/0")
	public := key("203.0.113.0/24")
	proxyToo := key(proxy, "203.0.113.0/24") // an allowlist that includes the proxy itself
	for _, c := range []call{
		// Direct (untrusted) peers: the socket address decides, CIDR edges included.
		{"first address of a /31", "127.0.0.4", edges, nil, 200},
		{"last address of a /31", "127.0.0.5", edges, nil, 200},
		{"just below a /31", "127.0.0.3", edges, nil, 403},
		{"just above a /31", "127.0.0.6", edges, nil, 403},
		{"single address", "127.0.0.3", single, nil, 200},
		{"single address, neighbour", "127.0.0.2", single, nil, 403},
		{"mapped entry, IPv4 peer", "127.0.0.5", mapped, nil, 200},
		{"mapped entry, outside", "127.0.0.6", mapped, nil, 403},
		// Spoofing from an untrusted peer is ignored, whatever the header.
		{"spoofed X-Forwarded-For", "127.0.0.2", office, xff("10.1.2.3"), 403},
		{"spoofed chain ending in a trusted proxy", "127.0.0.2", office, xff("10.1.2.3, 10.9.0.1"), 403},
		{"spoofed X-Real-IP", "127.0.0.2", office, http.Header{"X-Real-Ip": {"10.1.2.3"}}, 403},
		{"spoofed True-Client-IP", "127.0.0.2", office, http.Header{"True-Client-Ip": {"10.1.2.3"}}, 403},
		{"spoofed Forwarded", "127.0.0.2", office, http.Header{"Forwarded": {"for=10.1.2.3"}}, 403},
		{"spoofed CF-Connecting-IP", "127.0.0.2", office, http.Header{"Cf-Connecting-Ip": {"10.1.2.3"}}, 403},
		{"spoofed into an allowed /31", "127.0.0.2", edges, xff("127.0.0.4"), 403},
		// IPv6 peers.
		{"IPv6 peer, exact", "::1", loop6, nil, 200},
		{"IPv6 peer in ::/0", "::1", v6net, nil, 200},
		{"IPv4 peer is not in ::/0", "127.0.0.2", v6net, nil, 403},
		{"IPv4 peer, IPv6 entry", "127.0.0.2", loop6, nil, 403},
		{"IPv6 peer spoofing", "::1", office, xff("10.1.2.3"), 403},
		// Behind the trusted proxy: the rightmost untrusted hop is the client.
		{"one hop", proxy, public, xff("203.0.113.5"), 200},
		{"trusted hops skipped", proxy, public, xff("203.0.113.5, 10.9.0.7, 10.9.255.254"), 200},
		{"spoof left of the real client", proxy, public, xff("203.0.113.5, 198.51.100.1"), 403},
		{"spoof left of the real client, reversed", proxy, public, xff("198.51.100.1, 203.0.113.5"), 200},
		{"two header lines", proxy, public, xff("198.51.100.1", "203.0.113.5"), 200},
		{"hop with a port", proxy, public, xff("203.0.113.5:4711"), 200},
		{"mapped hop", proxy, public, xff("::ffff:203.0.113.5"), 200},
		{"200 hops", proxy, public, xff("198.51.100.1, 203.0.113.5," + strings.Repeat(" 10.9.1.1,", 198) + " 10.9.0.1"), 200},
		{"no header: the proxy itself", proxy, proxyToo, nil, 200},
		{"malformed hop is not the proxy", proxy, proxyToo, xff("garbage"), 403},
		{"unknown hop is not the proxy", proxy, proxyToo, xff("203.0.113.5, unknown"), 403},
		{"empty hop is not the proxy", proxy, proxyToo, xff("203.0.113.5, "), 403},
		{"zoned hop is not the proxy", proxy, proxyToo, xff("fe80::1%eth0"), 403},
		{"every hop trusted: the leftmost is the client", proxy, office, xff("10.9.0.5"), 200},
	} {
		send(c)
	}
}
