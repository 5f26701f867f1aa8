package queue_test

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/queue"
)

// exampleTB lends the examples the tests' Redis: redistest wants a testing.TB, which examples do
// not get. Only the methods redistest calls are implemented.
type exampleTB struct {
	testing.TB
	name     string
	cleanups []func()
}

func (e *exampleTB) Helper()                        {}
func (e *exampleTB) Name() string                   { return e.name }
func (e *exampleTB) Cleanup(f func())               { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (e *exampleTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// newExampleClient returns a queue client on a fresh key prefix of the test Redis, with its logs
// discarded, and the function that closes it and removes its keys. In a service this is
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	client, err := queue.NewClient(rdb, queue.Config{})
func newExampleClient(name string) (*queue.Client, func()) {
	tb := &exampleTB{name: "Example" + name}
	env := redistest.New(tb)
	client, err := queue.NewClient(env.Client, queue.Config{
		Prefix: env.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	return client, func() {
		_ = client.Close()
		for _, f := range slices.Backward(tb.cleanups) {
			f()
		}
	}
}
