package cache

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// exampleTB lets examples (which get no *testing.T) use the redistest harness.
type exampleTB struct {
	testing.TB
	name     string
	cleanups []func()
}

func (e *exampleTB) Helper()                      {}
func (e *exampleTB) Name() string                 { return e.name }
func (e *exampleTB) Cleanup(f func())             { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (e *exampleTB) Errorf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

// NewTestRedis gives an example a client of the test server and a key prefix of its own; done
// removes the keys and closes the client.
func NewTestRedis(name string) (rdb redis.UniversalClient, prefix string, done func()) {
	tb := &exampleTB{name: "Example" + name}
	env := redistest.New(tb)
	return env.Client, env.Prefix, func() {
		for i := len(tb.cleanups) - 1; i >= 0; i-- {
			tb.cleanups[i]()
		}
	}
}
