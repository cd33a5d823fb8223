package servertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a private redis-server on its own loopback port, without persistence, that a test can
// kill (its data is lost), start again on the same port, or pause (it keeps its data and answers no
// client for a while). Without redis-server on the PATH the test is skipped, except with CI=true, where
// it fails.
type RedisServer struct {
	t    testing.TB
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// NewRedisServer starts a redis-server on a free port; it is killed when the test ends.
func NewRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is required when CI=true")
		}
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &RedisServer{t: t, port: ln.Addr().(*net.TCPAddr).Port}
	ln.Close()
	t.Cleanup(r.Kill)
	r.Start()
	return r
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// URL is the redis:// URL of its database 0.
func (r *RedisServer) URL() string { return "redis://" + r.Addr() + "/0" }

// Start starts the server (again) and waits until it answers PING.
func (r *RedisServer) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.cmd, r.done = cmd, done
	c := r.Client()
	defer c.Close()
	if took, ok := WaitFor(10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	}); !ok {
		r.t.Fatalf("redis-server on %s did not answer within %v", r.Addr(), took)
	}
}

// Kill ends the server with SIGKILL and waits for it to exit; its data is gone.
func (r *RedisServer) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// Pause makes the server answer no client for d (CLIENT PAUSE … ALL): connections stay open and
// commands wait, as behind a black hole, and the data stays.
func (r *RedisServer) Pause(d time.Duration) {
	r.t.Helper()
	c := r.Client()
	defer c.Close()
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		r.t.Fatalf("redis CLIENT PAUSE: %v", err)
	}
}

// Client opens a client to the server (the caller closes it).
func (r *RedisServer) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
}

func (r *RedisServer) String() string { return fmt.Sprintf("redis-server on %s", r.Addr()) }
