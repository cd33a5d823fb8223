package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Direction is one direction of the connections a Proxy carries.
type Direction int

// Directions of a Proxy's traffic.
const (
	ToServer Direction = 1 << iota // client → database
	ToClient                       // database → client
	BothWays = ToServer | ToClient
)

// faults are the failures a test injects into a Proxy; guarded by Proxy.mu.
type faults struct {
	toServer, toClient time.Duration // latency added before each chunk is forwarded
	hole               chan struct{} // non-nil while black-holed; closed by Heal
	cut                chan struct{} // closed by Stop: forwarders held by a fault give up
}

// stopped releases the forwarders of the connections Stop cut. Caller holds Proxy.mu.
func (f *faults) stopped() {
	close(f.cut)
	f.cut = make(chan struct{})
}

// SetLatency delays every chunk of bytes forwarded in dir by d before it is written on (0: none), so
// each round trip to the database takes about twice d longer: a slow or distant database.
func (p *Proxy) SetLatency(dir Direction, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir&ToServer != 0 {
		p.faults.toServer = d
	}
	if dir&ToClient != 0 {
		p.faults.toClient = d
	}
}

// BlackHole makes the proxy swallow traffic: open connections stay up and new ones are accepted, but no
// byte goes through either way until Heal. It is the hang of a network partition, where nothing answers
// and nothing fails, as opposed to Stop's refused and reset connections. Bytes sent meanwhile are held
// and delivered by Heal, as TCP retransmission delivers them after a short partition.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.faults.hole == nil {
		p.faults.hole = make(chan struct{})
	}
}

// Heal ends a black hole and removes any latency.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.faults.hole != nil {
		close(p.faults.hole)
		p.faults.hole = nil
	}
	p.faults.toServer, p.faults.toClient = 0, 0
}

// forward copies src to dst in dir, chunk by chunk, through the faults in force, until either side
// closes or the proxy is stopped.
func (p *Proxy) forward(dst, src net.Conn, dir Direction, cut <-chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass(dir, cut) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass waits until a chunk going dir may be forwarded: after any black hole and the latency. It
// reports false when the proxy was stopped meanwhile.
func (p *Proxy) pass(dir Direction, cut <-chan struct{}) bool {
	for {
		p.mu.Lock()
		hole, delay := p.faults.hole, p.faults.toServer
		if dir == ToClient {
			delay = p.faults.toClient
		}
		p.mu.Unlock()
		if hole != nil {
			select {
			case <-hole:
				continue // healed: look at the latency in force now
			case <-cut:
				return false
			}
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-cut:
				return false
			}
		}
		return true
	}
}

// Kill stops the server the way a crash does (pg_ctl stop -m immediate): every backend ends at once
// without a checkpoint, transactions in flight included; the next Start recovers from the WAL.
func (c *PGCluster) Kill() {
	c.t.Helper()
	if err := c.pgctl("stop", "-m", "immediate"); err != nil {
		c.t.Fatalf("kill PostgreSQL: %v", err)
	}
}

// Port is the cluster's TCP port on 127.0.0.1.
func (c *PGCluster) Port() int { return c.port }

// NewDatabase creates a database in the cluster and returns its URL (as the superuser), with params
// (such as application_name) added to the URL's query.
func (c *PGCluster) NewDatabase(t testing.TB, name string, params url.Values) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatalf("connect to the private cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	u, _ := url.Parse(c.URL())
	u.Path = "/" + name
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Try is Do for load and fault tests: it sends with client (nil: http.DefaultClient) and key, and
// returns the transport error of a request that got no answer at all (reset, refused, or client
// timeout) instead of failing the test, so that the caller can count such failures. Answers are checked
// as Do checks them. Try may run on several goroutines once e.Contract() has been called once.
func (e *Env) Try(client *http.Client, key, method, path string, body any, header ...string) (*Response, error) {
	e.T.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	var rd io.Reader
	var sent []byte
	if body != nil {
		if b, ok := body.([]byte); ok {
			sent = b
		} else {
			data, err := json.Marshal(body)
			if err != nil {
				return nil, fmt.Errorf("encode body: %w", err)
			}
			sent = data
		}
		rd = bytes.NewReader(sent)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&out.Body); err != nil {
			e.T.Errorf("%s %s: %d with a body that is not a JSON object: %q", method, path, res.StatusCode, raw)
			return out, nil
		}
	}
	e.checkEnvelope(method, path, out)
	e.checkContract(req, sent, res, out)
	return out, nil
}
