package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/queue"
)

type Email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Produce typed jobs and run them with a pool of workers. Consume returns when its context ends,
// after the running handlers finished and their acks were sent.
func ExampleQueue_Consume() {
	client, done := newExampleClient("Consume")
	defer done()
	ctx := context.Background()

	emails, err := queue.NewQueue[Email](client, "shop", "emails", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}
	for _, to := range []string{"ann@example.com", "bob@example.com", "cid@example.com"} {
		if _, err := emails.Produce(ctx, &Email{To: to, Subject: "Welcome"}, 0); err != nil {
			panic(err)
		}
	}

	// A service consumes until it shuts down; this example stops after three jobs.
	ctx, stop := context.WithCancel(ctx)
	var sent atomic.Int32
	err = emails.Consume(ctx, func(ctx context.Context, e *Email) error {
		d, _ := queue.DeliveryFromContext(ctx)
		fmt.Printf("send %q to %s (try %d)\n", e.Subject, e.To, d.Delivery)
		if sent.Add(1) == 3 {
			stop()
		}
		return nil // nil acks the job
	}, queue.ConsumeConfig{Concurrency: 1})
	fmt.Println("consume returned:", err)
	fmt.Println("succeeded:", emails.WorkerStats().Succeeded)
	// Output:
	// send "Welcome" to ann@example.com (try 1)
	// send "Welcome" to bob@example.com (try 1)
	// send "Welcome" to cid@example.com (try 1)
	// consume returned: <nil>
	// succeeded: 3
}

type Reminder struct {
	Text string `json:"text"`
}

// A delayed job waits in Redis until it is due; an idle worker wakes for it on time, without
// polling.
func ExampleQueue_Produce_delayed() {
	client, done := newExampleClient("Delayed")
	defer done()
	ctx := context.Background()

	reminders, err := queue.NewQueue[Reminder](client, "app", "reminders", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}
	start := time.Now()
	id, err := reminders.Produce(ctx, &Reminder{Text: "pay the invoice"}, 200*time.Millisecond)
	if err != nil {
		panic(err)
	}
	job, err := client.Get(ctx, "app", "reminders", id)
	if err != nil {
		panic(err)
	}
	fmt.Println("state:", job.State)

	ctx, stop := context.WithCancel(ctx)
	_ = reminders.Consume(ctx, func(ctx context.Context, r *Reminder) error {
		fmt.Printf("%s (waited at least 200ms: %v)\n", r.Text, time.Since(start) >= 200*time.Millisecond)
		stop()
		return nil
	}, queue.ConsumeConfig{})
	// Output:
	// state: delayed
	// pay the invoice (waited at least 200ms: true)
}

type Charge struct {
	Order string `json:"order"`
}

// A failed try is retried after the RetryPolicy's delay (exponential with jitter by default);
// RetryAfter names the delay itself, and SkipRetry gives up at once.
func Example_retries() {
	client, done := newExampleClient("Retries")
	defer done()
	ctx := context.Background()

	charges, err := queue.NewQueue[Charge](client, "shop", "charges", queue.QueueConfig{Tries: 5})
	if err != nil {
		panic(err)
	}
	if _, err := charges.Produce(ctx, &Charge{Order: "A-1"}, 0); err != nil {
		panic(err)
	}

	ctx, stop := context.WithCancel(ctx)
	_ = charges.Consume(ctx, func(ctx context.Context, c *Charge) error {
		d, _ := queue.DeliveryFromContext(ctx)
		switch d.Delivery {
		case 1:
			fmt.Println("try 1: gateway timeout")
			return errors.New("gateway timeout") // retried after the policy's delay
		case 2:
			fmt.Println("try 2: rate limited")
			return queue.RetryAfter(50*time.Millisecond, errors.New("rate limited"))
		default:
			fmt.Printf("try %d: charged %s\n", d.Delivery, c.Order)
			stop()
			return nil
		}
	}, queue.ConsumeConfig{
		RetryPolicy: queue.ExponentialBackoff{Base: 20 * time.Millisecond, Max: time.Second, Jitter: 0.2},
	})
	s := charges.WorkerStats()
	fmt.Printf("failed %d, retried %d, succeeded %d\n", s.Failed, s.Retried, s.Succeeded)
	// Output:
	// try 1: gateway timeout
	// try 2: rate limited
	// try 3: charged A-1
	// failed 2, retried 2, succeeded 1
}

// A job out of tries, or failed with SkipRetry, goes to the dead letter: list it with its payload
// decoded, respawn it when the cause is fixed, or delete it.
func ExampleQueue_DeadList() {
	client, done := newExampleClient("DeadList")
	defer done()
	ctx := context.Background()

	charges, err := queue.NewQueue[Charge](client, "shop", "charges", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}
	if _, err := charges.Produce(ctx, &Charge{Order: "B-7"}, 0); err != nil {
		panic(err)
	}
	cctx, stop := context.WithCancel(ctx)
	_ = charges.Consume(cctx, func(ctx context.Context, c *Charge) error {
		stop()
		return queue.SkipRetry(errors.New("card declined"))
	}, queue.ConsumeConfig{})

	page, err := charges.DeadList(ctx, 10, "")
	if err != nil {
		panic(err)
	}
	for _, j := range page.Jobs {
		fmt.Printf("dead: order %s after %d try: %s\n", j.Value.Order, j.Deliveries, j.LastError)
	}
	respawned, err := charges.DeadRespawn(ctx, page.Jobs[0].ID)
	if err != nil {
		panic(err)
	}
	s, err := charges.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("respawned %d; ready %d, dead %d\n", len(respawned), s.Ready, s.Dead)
	// Output:
	// dead: order B-7 after 1 try: card declined
	// respawned 1; ready 1, dead 0
}

// When the context ends, Consume stops fetching and hands back at once the jobs it fetched but did
// not start; running handlers may finish within the DrainTimeout (their contexts stay live), and
// the jobs of handlers still running after it are handed back too. Nothing is lost and no try is
// used up.
func ExampleQueue_Consume_shutdown() {
	client, done := newExampleClient("Shutdown")
	defer done()
	ctx := context.Background()

	emails, err := queue.NewQueue[Email](client, "shop", "emails", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}
	for i := range 4 {
		if _, err := emails.Produce(ctx, &Email{To: fmt.Sprintf("user%d@example.com", i)}, 0); err != nil {
			panic(err)
		}
	}

	ctx, shutdown := context.WithCancel(ctx)
	started, drained := make(chan struct{}), make(chan struct{})
	result := make(chan error, 1)
	go func() {
		// One handler runs, two jobs wait prefetched, one stays in Redis.
		result <- emails.Consume(ctx, func(hctx context.Context, e *Email) error {
			fmt.Println("sending to", e.To)
			close(started)
			<-drained // still working when the shutdown begins
			fmt.Println("finished", e.To, "during the drain; context still live:", hctx.Err() == nil)
			return nil
		}, queue.ConsumeConfig{Concurrency: 1, Prefetch: 2, DrainTimeout: 10 * time.Second})
	}()
	<-started
	shutdown() // SIGTERM in a service
	close(drained)
	fmt.Println("consume returned:", <-result)

	ws := emails.WorkerStats()
	s, err := emails.Stats(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("succeeded %d, handed back %d; in Redis: ready %d, leased %d\n", ws.Succeeded, ws.Released, s.Ready, s.Leased)
	// Output:
	// sending to user0@example.com
	// finished user0@example.com during the drain; context still live: true
	// consume returned: <nil>
	// succeeded 1, handed back 2; in Redis: ready 3, leased 0
}

// Middleware wraps every run of the handler: the place for logging, metrics and tracing.
func ExampleMiddleware() {
	client, done := newExampleClient("Middleware")
	defer done()
	ctx := context.Background()

	emails, err := queue.NewQueue[Email](client, "shop", "emails", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}
	if _, err := emails.Produce(ctx, &Email{To: "ann@example.com"}, 0,
		queue.WithAttributes(map[string]string{"trace_id": "4bf92f35"})); err != nil {
		panic(err)
	}

	traced := func(next queue.Handler) queue.Handler {
		return func(ctx context.Context, d *queue.Delivery) error {
			fmt.Printf("start %s/%s trace %s\n", d.Namespace, d.Queue, d.Attributes["trace_id"])
			err := next(ctx, d)
			fmt.Println("end, error:", err)
			return err
		}
	}
	ctx, stop := context.WithCancel(ctx)
	_ = emails.Consume(ctx, func(ctx context.Context, e *Email) error {
		fmt.Println("send to", e.To)
		stop()
		return nil
	}, queue.ConsumeConfig{Middleware: []queue.Middleware{traced}})
	// Output:
	// start shop/emails trace 4bf92f35
	// send to ann@example.com
	// end, error: <nil>
}

// A backlog monitor alerts when a queue's waiting jobs or its dead letter grow past thresholds.
// Start runs the checks every Interval and calls OnAlert; Check runs one.
func ExampleBacklogMonitor_Check() {
	client, done := newExampleClient("Backlog")
	defer done()
	ctx := context.Background()

	emails, err := queue.NewQueue[Email](client, "shop", "emails", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}
	for range 3 {
		if _, err := emails.Produce(ctx, &Email{To: "ann@example.com"}, 0); err != nil {
			panic(err)
		}
	}
	mon, err := queue.NewBacklogMonitor(client, queue.BacklogConfig{
		Queues: []queue.BacklogQueue{emails.Backlog(2, 1)}, // alert at 2 waiting jobs, or any new dead job
	})
	if err != nil {
		panic(err)
	}
	alerts, err := mon.Check(ctx)
	if err != nil {
		panic(err)
	}
	for _, a := range alerts {
		fmt.Printf("%s/%s: %s %d (threshold %d)\n", a.Namespace, a.Queue, a.Kind, a.Value, a.Threshold)
	}
	// Output:
	// shop/emails: depth 3 (threshold 2)
}
