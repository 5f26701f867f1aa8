package cache_test

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// exampleTB lets the examples borrow the test harness's Redis, which wants a testing.TB. Only the
// methods below are called.
type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (e *exampleTB) Helper()                   {}
func (e *exampleTB) Name() string              { return "example" }
func (e *exampleTB) Cleanup(f func())          { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleTB) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleTB) Logf(string, ...any)       {}
func (e *exampleTB) runCleanups() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

// exampleRedis returns a client of the test Redis, a key prefix of the example's own and a
// function that removes its keys. In your code: redis.NewClient(&redis.Options{Addr: ...}) and
// the default prefix.
func exampleRedis() (client redis.UniversalClient, prefix string, done func()) {
	tb := &exampleTB{}
	env := redistest.New(tb)
	return env.Client, env.Prefix, tb.runCleanups
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
