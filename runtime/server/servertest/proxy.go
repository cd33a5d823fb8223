package servertest

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy to a database that a test can cut (Stop) and restore (Start) to simulate an
// outage: Stop closes the listener and every open connection.
type Proxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	faults faults // latency and black hole (faults.go)
}

// NewProxy starts a proxy on a free loopback port forwarding to target (host:port).
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}, faults: faults{cut: make(chan struct{})}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Stop)
	t.Cleanup(p.Heal) // unblock forwarders held by a black hole
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *Proxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	cut := p.faults.cut
	p.mu.Unlock()
	go func() { p.forward(up, c, ToServer, cut); up.Close() }()
	p.forward(c, up, ToClient, cut)
	c.Close()
}

// Stop refuses new connections and cuts the open ones.
func (p *Proxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	p.faults.stopped()
}

// Start accepts connections again on the same address.
func (p *Proxy) Start(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}
