package sluice_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicehq/sluice"
)

func TestShortenKeepsShortInputs(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("q", sluice.MaxEcho)
	if got := sluice.Shorten(s); got != s {
		t.Fatalf("Shorten(%d bytes) = %q, want it unchanged", len(s), got)
	}
}

// A long input is cut to MaxEcho bytes on a rune boundary and says how long it was.
func TestShortenCutsLongInputs(t *testing.T) {
	t.Parallel()
	s := "a" + strings.Repeat("é", 1<<19) // 1 MiB + 1 byte; the cut at 200 falls inside an "é"
	got := sluice.Shorten(s)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…(1048577 bytes)") || len(got) > sluice.MaxEcho+len("…(1048577 bytes)") {
		t.Fatalf("Shorten(1 MiB) = %q", got)
	}
}

// Invalid quotes its string arguments shortened, however they are formatted.
func TestInvalidShortensItsArguments(t *testing.T) {
	t.Parallel()
	name := strings.Repeat("n", 1<<20)
	fe := sluice.Invalid("queue", "%q is not a name (%s, %d)", name, []byte(name), 7)
	if len(fe.Reason) > 3*sluice.MaxEcho || !strings.HasSuffix(fe.Reason, "bytes), 7)") {
		t.Fatalf("Reason is %d bytes: %.300q", len(fe.Reason), fe.Reason)
	}
}
