package queue_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/queue"
)

func TestPublishConsumeAck(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		id := f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("hello"), Attributes: map[string]string{"a": "b"}})
		d := f.consumeOne(t, "q")
		if d.ID != id || string(d.Payload) != "hello" || d.Delivery != 1 || d.RemainingTries != 2 || d.Attributes["a"] != "b" {
			t.Fatalf("delivery = %+v", d)
		}
		f.ack(t, d)
		s := f.stats(t, "q")
		if s.Ready != 0 || s.Leased != 0 || s.Published != 1 || s.Consumed != 1 || s.Acked != 1 {
			t.Fatalf("stats = %+v", s)
		}
	})
}
