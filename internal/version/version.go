// Package version holds the version of the sluice binary, for `sluice version`, the server's
// /version endpoint and the User-Agent of the client commands.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release of this build. Release builds set it with
//
//	go build -ldflags "-X github.com/sluicehq/sluice/internal/version.Version=v1.2.3" ./cmd/sluice
//
// When it is left at "dev", String falls back to the module version recorded by `go install`.
var Version = "dev"

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit,omitempty"`
}

// Get returns the version of the running binary: Version, or the module version when the binary
// was built by `go install module@version`, plus the Go version and the VCS commit when known.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			info.Commit = s.Value
		}
	}
	return info
}

// String is the one-line form `sluice version` prints: "sluice dev (go1.26.8)".
func String() string {
	i := Get()
	s := "sluice " + i.Version
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " " + c
	}
	return s + " (" + i.GoVersion + ")"
}
