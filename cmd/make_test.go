package cmd_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// make run serves where RECORDS_ADDR and RECORDS_DB say, as recordsd itself would, and make run ADDR=…
// DB=… overrides both (make -n prints the command without running it).
func TestMakeRunHonoursEnvironment(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed for make run: %v", err)
	}
	tests := map[string]struct {
		env  []string
		args []string
		want string
	}{
		"defaults":              {want: "--addr 127.0.0.1:8080 --db sqlite:./data/records.db"},
		"environment":           {env: []string{"RECORDS_ADDR=127.0.0.1:9191", "RECORDS_DB=sqlite:/tmp/records-make.db"}, want: "--addr 127.0.0.1:9191 --db sqlite:/tmp/records-make.db"},
		"make variables win":    {env: []string{"RECORDS_ADDR=127.0.0.1:9191"}, args: []string{"ADDR=127.0.0.1:9292", "DB=sqlite:./other.db"}, want: "--addr 127.0.0.1:9292 --db sqlite:./other.db"},
		"empty is unset":        {env: []string{"RECORDS_ADDR="}, want: "--addr 127.0.0.1:8080 "},
		"address only from env": {env: []string{"RECORDS_ADDR=0.0.0.0:8000"}, want: "--addr 0.0.0.0:8000 --db sqlite:./data/records.db"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("make", append([]string{"-n", "run"}, tc.args...)...)
			cmd.Dir = servertest.RepoDir()
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); k != "RECORDS_ADDR" && k != "RECORDS_DB" && k != "ADDR" && k != "DB" && k != "MAKEFLAGS" {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n run: %v\n%s", err, out)
			}
			var serve string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "recordsd serve") {
					serve = line
				}
			}
			if !strings.Contains(serve, tc.want) {
				t.Errorf("make -n run: %q, want %q in it", serve, tc.want)
			}
		})
	}
}
