package servertest

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
)

// CopyDefinitions copies the shipped definitions into a new directory of the test and returns it, for a
// test that changes them (live definitions: docs/issue-25.md).
func CopyDefinitions(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "definitions")
	src := DefinitionsDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".json") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// ResourceOrder lists cat's resources so that vocabularies come before the records that point at them
// and required references before their referrers.
func ResourceOrder(cat *model.Catalog) []*model.Resource {
	groups := []string{"sales_vocabulary", "activity_vocabulary", "delivery_vocabulary", "workspace", "crm", "delivery", "custom"}
	var out []*model.Resource
	for _, g := range groups {
		for _, r := range cat.CreationOrder() {
			if r.Group == g {
				out = append(out, r)
			}
		}
	}
	return out
}

var hooksLine = regexp.MustCompile(`(?m)^hooks: \[.*\]$`)

// DefinitionsWithHooks copies the shipped definitions (CopyDefinitions) with resource's hooks set to
// names, and returns the copy.
func DefinitionsWithHooks(t testing.TB, resource string, names ...string) string {
	t.Helper()
	dir := CopyDefinitions(t)
	SetHooks(t, dir, resource, names...)
	return dir
}

// SetHooks sets resource's hooks to names in the definitions directory dir.
func SetHooks(t testing.TB, dir, resource string, names ...string) {
	t.Helper()
	path := filepath.Join(dir, "resources", resource+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !hooksLine.Match(data) {
		t.Fatalf("%s has no hooks list", resource)
	}
	text := hooksLine.ReplaceAllLiteralString(string(data), "hooks: ["+strings.Join(names, ", ")+"]")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// What EvolveDefinitions adds to a copy of the shipped definitions: a field of tags, a rule on it
// (LiveRuleMessage refuses a value longer than 4 characters) and a whole resource, badges (a copy of
// tags).
const (
	LiveField       = "emoji"
	LiveResource    = "badges"
	LiveRuleMessage = "an emoji is at most 4 characters"
)

// EvolveDefinitions changes the definitions in dir as a schema maintainer would: tags gain the field
// LiveField with a rule, and a new resource LiveResource appears.
func EvolveDefinitions(t testing.TB, dir string) {
	t.Helper()
	tags := filepath.Join(dir, "resources", "tags.yaml")
	data, err := os.ReadFile(tags)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if err := os.WriteFile(filepath.Join(dir, "resources", LiveResource+".yaml"), []byte(strings.NewReplacer(
		"name: tags\n", "name: "+LiveResource+"\n", "label: Tag\n", "label: Badge\n", "label_plural: Tags\n", "label_plural: Badges\n").Replace(text)), 0o644); err != nil {
		t.Fatal(err)
	}
	field := "  " + LiveField + ":\n    type: string\n    label: Emoji\n    max_length: 8\n    filterable: true\n" +
		"rules:\n  - rule: \"!has(self." + LiveField + ") || size(self." + LiveField + ") <= 4\"\n    message: " + LiveRuleMessage + "\n    field: " + LiveField + "\n"
	i := strings.Index(text, "\nhooks:")
	if i < 0 {
		t.Fatalf("%s has no hooks key to add a field before", tags)
	}
	text = text[:i+1] + field + text[i+1:]
	if err := os.WriteFile(tags, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BreakDefinitions writes a mistake into dir's tags.yaml (an unknown field type, at line line) and
// returns the line.
func BreakDefinitions(t testing.TB, dir string) int {
	t.Helper()
	tags := filepath.Join(dir, "resources", "tags.yaml")
	data, err := os.ReadFile(tags)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "    type: boolean\n", "    type: boolish\n", 1)
	if text == string(data) {
		t.Fatalf("%s has no boolean field to break", tags)
	}
	if err := os.WriteFile(tags, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.Count(text[:strings.Index(text, "boolish")], "\n") + 1
}

// Load is a load loop of reads and creates of tags (a create every third request), sent by workers
// goroutines with one key round robin over the servers at bases, each worker pausing pace between its
// requests (to stay within a plan's rate limit), until Stop. It counts the answers by status; a
// transport error or an answer of 300 or more is a failure.
type Load struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	statuses map[int]int
	failures []string
}

// StartLoad starts a Load.
func StartLoad(bases []string, key string, workers int, pace time.Duration) *Load {
	l := &Load{stop: make(chan struct{}), statuses: map[int]int{}}
	client := &http.Client{Timeout: 15 * time.Second}
	for w := range workers {
		l.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				base := bases[(w+n)%len(bases)]
				method, path, body := "GET", "/v1/tags?page_size=5", ""
				if n%3 == 0 {
					method, path, body = "POST", "/v1/tags", fmt.Sprintf(`{"name":"load %d-%d"}`, w, n)
				}
				req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				status := 0
				res, err := client.Do(req)
				if err == nil {
					status = res.StatusCode
					data, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if status >= 300 {
						err = fmt.Errorf("%d %s", status, data)
					}
				}
				l.mu.Lock()
				l.statuses[status]++
				if err != nil {
					l.failures = append(l.failures, fmt.Sprintf("%s %s%s: %v", method, base, path, err))
				}
				l.mu.Unlock()
				time.Sleep(pace)
			}
		})
	}
	return l
}

// Stop ends the loop and returns the answers by status and the failures.
func (l *Load) Stop() (statuses map[int]int, failures []string) {
	close(l.stop)
	l.wg.Wait()
	return l.statuses, l.failures
}
