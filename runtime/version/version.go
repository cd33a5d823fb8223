// Package version says which build of recordsd and recordsctl is running: the version the build set
// with the linker, or else the module version and the version-control revision the Go toolchain stamps
// into every binary built from a checkout (runtime/debug.ReadBuildInfo).
//
// A release build sets the version with
//
//	go build -ldflags "-X github.com/workspace-records/records/runtime/version.Version=v1.4.0" ./cmd/...
//
// (make build VERSION=v1.4.0 does so).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is set at link time (-X); empty, the module version of the build information is used.
var Version string

// Info is what a binary knows about its build.
type Info struct {
	Version  string `json:"version"`  // the release, the module's pseudo-version, or "devel"
	Revision string `json:"revision"` // the commit built from ("" when unknown)
	Time     string `json:"time"`     // the commit's time, RFC 3339 ("" when unknown)
	Modified bool   `json:"modified"` // the checkout had uncommitted changes
	Go       string `json:"go"`       // the toolchain, e.g. go1.25.1
	Platform string `json:"platform"` // GOOS/GOARCH
}

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return get(Version, bi)
}

func get(override string, bi *debug.BuildInfo) Info {
	info := Info{Version: override, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// String is the one line `--version` prints after the program's name:
// "v1.4.0 (revision 0123abcd…, 2026-11-24T21:00:00Z, modified; go1.25.1 linux/amd64)".
func (i Info) String() string {
	var build []string
	if i.Revision != "" {
		build = append(build, "revision "+i.Revision)
	}
	if i.Time != "" {
		build = append(build, i.Time)
	}
	if i.Modified {
		build = append(build, "modified")
	}
	toolchain := i.Go + " " + i.Platform
	if len(build) == 0 {
		return fmt.Sprintf("%s (%s)", i.Version, toolchain)
	}
	return fmt.Sprintf("%s (%s; %s)", i.Version, strings.Join(build, ", "), toolchain)
}
