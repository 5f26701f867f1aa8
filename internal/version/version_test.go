package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	s := String()
	if !strings.HasPrefix(s, "sluice ") || !strings.HasSuffix(s, "("+runtime.Version()+")") {
		t.Fatalf("String() = %q, want sluice <version> ... (%s)", s, runtime.Version())
	}
	if got := Get(); got.Version == "" || got.GoVersion != runtime.Version() {
		t.Fatalf("Get() = %+v", got)
	}
}
