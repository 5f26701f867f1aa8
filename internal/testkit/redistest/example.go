package redistest

import (
	"fmt"
	"slices"
	"testing"
)

// ForExample gives a runnable example (which has no testing.TB) the test Redis: an Env whose keys
// and client are removed by the returned function. A failure to get a server panics, which fails
// the example.
func ForExample(name string) (*Env, func()) {
	tb := &exampleTB{name: name}
	env := New(tb)
	return env, func() {
		for _, f := range slices.Backward(tb.cleanups) {
			f()
		}
	}
}

// exampleTB is the part of testing.TB that New uses.
type exampleTB struct {
	testing.TB
	name     string
	cleanups []func()
}

func (e *exampleTB) Helper()                   {}
func (e *exampleTB) Name() string              { return e.name }
func (e *exampleTB) Cleanup(f func())          { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleTB) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleTB) Logf(string, ...any)       {}
