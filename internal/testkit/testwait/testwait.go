// Package testwait waits, in tests, for what happens asynchronously: it polls a condition until it
// holds or a deadline passes, so a test neither sleeps a fixed time nor hangs when the condition
// never comes.
package testwait

import (
	"testing"
	"time"
)

// pollEvery is the pause between two looks at a condition: short against the waits tests make,
// long enough not to spin a core that the code under test needs.
const pollEvery = 5 * time.Millisecond

// Until waits until cond holds and fails the test, naming what it waited for, if it does not hold
// within the given time.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(pollEvery)
	}
}

// UntilNil waits until cond returns nil and fails the test with cond's last error if it does not
// within the given time.
func UntilNil(t testing.TB, within time.Duration, cond func() error) {
	t.Helper()
	UntilNilEvery(t, within, pollEvery, cond)
}

// UntilNilEvery is UntilNil with its own pause between two looks, for a condition that costs
// more to check (a round trip to a browser, say).
func UntilNilEvery(t testing.TB, within, every time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", within, err)
		}
		time.Sleep(every)
	}
}
