package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// TestConsumeShowsWhatGetShows: a consumed job, whose fields the client decodes from its stored
// record (lease_popped), is the delivery Get shows for it (reply_job, built in Lua), for jobs with
// every field set, from both publish scripts.
func TestConsumeShowsWhatGetShows(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, ctx := newInternalClient(t, env)
		full := PublishParams{
			Namespace: "ns", Queue: "q", Payload: []byte("payload"), Priority: 3, Tries: 5,
			TTL: time.Hour, TTR: 90 * time.Second, Backoff: Backoff{Base: time.Second, Max: time.Minute},
			UniqueKey: "u", Attributes: map[string]string{"k": "v"},
		}
		plain := PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("plain"), Priority: 3}
		for _, p := range []PublishParams{full, plain} {
			if _, err := c.Publish(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := c.Consume(ctx, ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Count: 2})
		if err != nil || len(ds) != 2 {
			t.Fatalf("Consume: %d jobs, %v", len(ds), err)
		}
		for _, d := range ds {
			j, err := c.Get(ctx, "ns", "q", d.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := j.delivery()
			want.Elapsed = d.Elapsed
			if fmt.Sprint(d) != fmt.Sprint(want) || j.State != StateLeased {
				t.Errorf("Consume gave\n%+v\nGet shows (%s)\n%+v", d, j.State, want)
			}
		}
		if ds[0].Attributes["k"] != "v" || ds[0].Delivery != 1 || ds[0].RemainingTries != 4 || ds[0].ExpiresAt.IsZero() {
			t.Errorf("the full job: %+v", ds[0])
		}
	})
}

// newInternalClient is a Client on env for the package's own tests, closed when the test ends,
// and a context that ends with the test or after 30 s.
func newInternalClient(t *testing.T, env *redistest.Env) (*Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := NewClient(env.Client, Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, ctx
}
