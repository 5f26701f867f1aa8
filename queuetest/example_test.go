package queuetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queuetest"
)

type welcome struct {
	User string `json:"user"`
}

// signUp is the code under test: it enqueues a welcome email.
func signUp(ctx context.Context, q *queue.Queue[welcome], user string) error {
	_, err := q.Produce(ctx, &welcome{User: user}, 0, queue.WithAttributes(map[string]string{"kind": "welcome"}))
	return err
}

// A test asserts that the code under test enqueued a job, then runs the queue's jobs through the
// real handler synchronously.
func Example() {
	// In a test, t is the *testing.T of the test function and the Redis URL is the test server's;
	// queuetest.NewClient(t, url, queue.Config{Prefix: ...}) starts the client.
	t := &testing.T{}
	env, done := redistest.ForExample("queuetest")
	defer done()
	ctx := context.Background()
	client, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	mail, err := queue.NewQueue[welcome](client, "app", "mail", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}

	if err := signUp(ctx, mail, "ada"); err != nil {
		panic(err)
	}
	job := queuetest.RequireEnqueuedValue(ctx, t, mail, &welcome{User: "ada"},
		&queuetest.Opts{State: queue.StateReady, Attributes: map[string]string{"kind": "welcome"}})
	fmt.Println("enqueued:", string(job.Payload))

	res := queuetest.DrainQueue(ctx, t, mail, func(ctx context.Context, w *welcome) error {
		fmt.Println("sending welcome to", w.User)
		return nil
	}, nil)
	fmt.Println("acked:", res.Count(queuetest.Acked))
	queuetest.RequireNotEnqueued(ctx, t, client, "app", "mail", nil, nil)
	fmt.Println("queue empty")
	// Output:
	// enqueued: {"user":"ada"}
	// sending welcome to ada
	// acked: 1
	// queue empty
}
