package servertest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// PGCluster is a private PostgreSQL server, its own data directory and port, that a test can stop and
// start for real: readiness and fault tests take the database away without touching the shared one.
type PGCluster struct {
	t    testing.TB
	bin  string // directory of initdb, pg_ctl and postgres
	dir  string // data directory
	port int
	cred *syscall.Credential // the postgres user's, when the test runs as root (PostgreSQL refuses root)
}

// NewPGCluster creates and starts a PostgreSQL cluster in a temporary directory; it is stopped and
// removed when the test ends. Missing PostgreSQL programs skip the test, except when CI=true.
func NewPGCluster(t testing.TB) *PGCluster {
	t.Helper()
	bin := pgBinDir()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL server programs (initdb, pg_ctl) are required when CI=true")
		}
		t.Skip("PostgreSQL server programs (initdb, pg_ctl) not found")
	}
	dir, err := os.MkdirTemp("", "records-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c := &PGCluster{t: t, bin: bin, dir: dir, port: freePort(t)}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to own the cluster: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.pgctl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	data := filepath.Join(dir, "data")
	if out, err := c.command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.Start()
	return c
}

// URL is the cluster's postgres database, as the superuser.
func (c *PGCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Start starts the server and waits until it accepts connections.
func (c *PGCluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off", c.port, c.dir)
	if err := c.pgctl("start", "-l", filepath.Join(c.dir, "log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		c.t.Fatalf("start PostgreSQL: %v\n%s", err, log)
	}
}

// Stop shuts the server down (fast: open connections are cut, as in a crash of the network or a restart).
func (c *PGCluster) Stop() {
	c.t.Helper()
	if err := c.pgctl("stop", "-m", "fast"); err != nil {
		c.t.Fatalf("stop PostgreSQL: %v", err)
	}
}

func (c *PGCluster) pgctl(args ...string) error {
	full := append([]string{"-D", filepath.Join(c.dir, "data"), "-w", "-t", "60"}, args...)
	out, err := c.command("pg_ctl", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %w\n%s", args[0], err, out)
	}
	return nil
}

func (c *PGCluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

// pgBinDir finds the newest installed PostgreSQL's programs (Debian keeps them out of PATH).
func pgBinDir() string {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := string(out[:len(out)-1]); fileExists(filepath.Join(dir, "initdb")) {
			return dir
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return versionOf(found[i]) < versionOf(found[j]) })
	if len(found) == 0 {
		return ""
	}
	return filepath.Dir(found[len(found)-1])
}

func versionOf(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WaitFor polls cond every 50 ms until it holds or timeout passes, and reports how long it took.
func WaitFor(timeout time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > timeout {
			return time.Since(start), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
