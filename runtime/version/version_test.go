package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "github.com/workspace-records/records", Version: "v0.0.0-20261124210000-e34af5b1c2d3+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "e34af5b1c2d3"}, {Key: "vcs.time", Value: "2026-11-24T21:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	toolchain := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	tests := map[string]struct {
		override string
		bi       *debug.BuildInfo
		want     Info
		line     string
	}{
		"stamped by the toolchain": {"", stamped,
			Info{Version: stamped.Main.Version, Revision: "e34af5b1c2d3", Time: "2026-11-24T21:00:00Z", Modified: true},
			"v0.0.0-20261124210000-e34af5b1c2d3+dirty (revision e34af5b1c2d3, 2026-11-24T21:00:00Z, modified; " + toolchain + ")"},
		"set by the linker": {"v1.4.0", stamped,
			Info{Version: "v1.4.0", Revision: "e34af5b1c2d3", Time: "2026-11-24T21:00:00Z", Modified: true},
			"v1.4.0 (revision e34af5b1c2d3, 2026-11-24T21:00:00Z, modified; " + toolchain + ")"},
		"no version control": {"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			Info{Version: "devel"}, "devel (" + toolchain + ")"},
		"no build information": {"", nil, Info{Version: "devel"}, "devel (" + toolchain + ")"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := get(tc.override, tc.bi)
			tc.want.Go, tc.want.Platform = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
			if got != tc.want {
				t.Errorf("get = %+v\nwant %+v", got, tc.want)
			}
			if got.String() != tc.line {
				t.Errorf("String = %q\nwant %q", got.String(), tc.line)
			}
		})
	}
	if v := Get(); v.Version == "" || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("Get() = %+v", v)
	}
}
