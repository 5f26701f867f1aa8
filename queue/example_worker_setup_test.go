package queue_test

import (
	"io"
	"log/slog"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// newExampleClient returns a queue client on a fresh key prefix of the test Redis, with its logs
// discarded, and the function that closes it and removes its keys. In a service this is
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	client, err := queue.NewClient(rdb, queue.Config{})
func newExampleClient(name string) (*queue.Client, func()) {
	env, cleanup := redistest.ForExample("Example" + name)
	client, err := queue.NewClient(env.Client, queue.Config{
		Prefix: env.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	return client, func() {
		_ = client.Close()
		cleanup()
	}
}
