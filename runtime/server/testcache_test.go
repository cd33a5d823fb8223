package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The generated-client tests install npm packages, generate clients and compile them: tens of seconds
// whose result only changes with their inputs. testCache keeps those results between runs, each under a
// key that hashes every input it depends on (the document served, the generator's pinned version or
// lock file, the test's own sources, the toolchain): an entry is never stale, only left unused when an
// input changes, and removed after cacheMaxAge unused. The tests still run the clients against a real
// server every time.
//
// The cache is os.UserCacheDir()/records-test (~/.cache/records-test), or RECORDS_TEST_CACHE; with
// RECORDS_TEST_CACHE=off (or no cache directory) every entry is made anew in the test's temporary
// directory.

// cacheMaxAge is how long an entry may go unused before the next fill of its kind removes it.
const cacheMaxAge = 14 * 24 * time.Hour

// cacheKey hashes parts (each followed by a NUL, so that ("ab", "c") and ("a", "bc") differ).
func cacheKey(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cacheRoot is the cache's directory, "" when there is none.
func cacheRoot() string {
	switch dir := os.Getenv("RECORDS_TEST_CACHE"); dir {
	case "off":
		return ""
	case "":
	default:
		return dir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "records-test")
}

// cached returns the directory of the cache entry kind/key, made first by fill when it is missing. fill
// writes into an empty directory that becomes the entry only once fill has returned without failing the
// test, so an entry is always complete; two processes filling the same entry at once both work, and
// the first to finish provides it. cached reports whether the entry was there already.
func cached(t *testing.T, kind, key string, fill func(dir string)) (string, bool) {
	t.Helper()
	root := cacheRoot()
	if root == "" {
		dir := filepath.Join(t.TempDir(), kind)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fill(dir)
		return dir, false
	}
	entry := filepath.Join(root, kind, key)
	if _, err := os.Stat(entry); err == nil {
		now := time.Now()
		_ = os.Chtimes(entry, now, now) // used: kept another cacheMaxAge
		return entry, true
	}
	if err := os.MkdirAll(filepath.Join(root, kind), 0o755); err != nil {
		t.Fatalf("test cache: %v", err)
	}
	pruneCache(filepath.Join(root, kind))
	tmp, err := os.MkdirTemp(filepath.Join(root, kind), ".fill-")
	if err != nil {
		t.Fatalf("test cache: %v", err)
	}
	defer os.RemoveAll(tmp) // left over when fill fails, or when another process's fill won
	fill(tmp)
	if t.Failed() {
		t.FailNow()
	}
	if err := os.Rename(tmp, entry); err != nil {
		if _, serr := os.Stat(entry); serr != nil {
			t.Fatalf("test cache: %v", err)
		}
	}
	return entry, false
}

// pruneCache removes the entries of dir unused for cacheMaxAge, and fills abandoned as long ago.
func pruneCache(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > cacheMaxAge {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// An entry is made once per key and found by the next call with the same key; another key makes
// another entry; no fill directory is left behind.
func TestTestCache(t *testing.T) {
	t.Setenv("RECORDS_TEST_CACHE", t.TempDir())
	fills := 0
	fill := func(dir string) {
		fills++
		if err := os.WriteFile(filepath.Join(dir, "made"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, hit := cached(t, "kind", cacheKey([]byte("a")), fill)
	if hit || fills != 1 {
		t.Fatalf("first call: hit %t, %d fills", hit, fills)
	}
	if again, hit := cached(t, "kind", cacheKey([]byte("a")), fill); !hit || again != a || fills != 1 {
		t.Fatalf("second call: %s (hit %t, %d fills), want %s from the cache", again, hit, fills, a)
	}
	if _, err := os.Stat(filepath.Join(a, "made")); err != nil {
		t.Fatal(err)
	}
	if b, hit := cached(t, "kind", cacheKey([]byte("a"), []byte("")), fill); hit || b == a || fills != 2 {
		t.Fatalf("another key: %s (hit %t, %d fills)", b, hit, fills)
	}
	if cacheKey([]byte("ab"), []byte("c")) == cacheKey([]byte("a"), []byte("bc")) {
		t.Error("the key does not separate its parts")
	}
	left, err := os.ReadDir(filepath.Join(os.Getenv("RECORDS_TEST_CACHE"), "kind"))
	if err != nil || len(left) != 2 {
		t.Errorf("the cache holds %d entries (%v), want the 2 made and no fill left over", len(left), err)
	}
}
