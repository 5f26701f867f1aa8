package queue

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// A publish call sent twice (a client retry after a lost reply) stores and queues each job once.
func TestPublishSentAgainQueuesNothingTwice(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := NewClient(env.Client, Config{Prefix: env.Prefix})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var reqs []publishReq
		for range 3 {
			args, err := c.publishArgs(PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("p")})
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, publishReq{ns: "ns", q: "q", args: args})
		}
		first, err := c.runPublish(ctx, "", reqs)
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.runPublish(ctx, "", reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs {
			if again[i] != first[i] || again[i].Duplicate {
				t.Fatalf("resent publish %d answered %+v, want %+v", i, again[i], first[i])
			}
		}
		st, err := c.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != 3 || st.Published != 3 {
			t.Fatalf("after a resent publish: %d ready, %d published; want 3 and 3", st.Ready, st.Published)
		}
	})
}
