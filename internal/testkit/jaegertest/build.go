package jaegertest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Module and Version name the Jaeger the tests run: its cmd/jaeger is the all-in-one (OTLP in,
// query API out, traces kept in memory).
const (
	Module  = "github.com/jaegertracing/jaeger"
	Version = "v1.76.0"
)

// binary returns the path of the jaeger binary, building it the first time on this machine. The
// build takes minutes (the OpenTelemetry Collector inside it is large), so the binary is kept in
// the user's cache directory (SLUICE_JAEGER_BIN names a binary to use instead); a lock file keeps
// concurrent test binaries from building it twice. The build fails loudly: the tests that need
// Jaeger never skip.
func binary() (string, error) {
	if bin := os.Getenv("SLUICE_JAEGER_BIN"); bin != "" {
		return bin, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "sluice-test", "jaeger-"+Version)
	bin := filepath.Join(dir, "jaeger")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks it too
	if _, err := os.Stat(bin); err == nil {              // built by another test binary meanwhile
		return bin, nil
	}
	return bin, build(bin)
}

// build downloads Jaeger's module and builds its cmd/jaeger into bin. It builds inside the
// module's own directory, since Jaeger's go.mod has replace directives that `go install
// pkg@version` refuses.
func build(bin string) error {
	start := time.Now()
	out, err := exec.Command("go", "mod", "download", "-json", Module+"@"+Version).Output()
	if err != nil {
		return fmt.Errorf("jaegertest: go mod download %s@%s: %w", Module, Version, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("jaegertest: go mod download %s@%s: no directory in %s", Module, Version, out)
	}
	tmp := bin + ".building"
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/jaeger")
	cmd.Dir = mod.Dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("jaegertest: building Jaeger %s (go build ./cmd/jaeger in %s): %w\n%s", Version, mod.Dir, err, out)
	}
	fmt.Fprintf(os.Stderr, "jaegertest: built Jaeger %s in %s\n", Version, time.Since(start).Round(time.Second))
	return os.Rename(tmp, bin)
}
