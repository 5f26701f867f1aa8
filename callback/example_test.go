package callback_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// A delayed job with a callback: nobody consumes it; when it is due, a Deliverer sends it to the
// receiver, signed, and keeps the receiver's answer as the job's result.
func ExampleDeliverer() {
	env, cleanup := redistest.ForExample("callback-ExampleDeliverer")
	defer cleanup()
	ctx := context.Background()

	store, err := callback.NewStore(env.Client, env.Prefix)
	if err != nil {
		panic(err)
	}
	secrets, err := store.RotateSecret(ctx, "shop", "") // a fresh whsec_ secret
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := callback.Verify(secrets[0], r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Printf("verified %s\n", body)
		fmt.Fprint(w, "order closed")
		close(done)
	}))
	defer receiver.Close()
	if _, err := store.AddDestination(ctx, "shop", receiver.URL+"/hooks"); err != nil {
		panic(err)
	}
	if err := store.SetAllowPrivate(ctx, "shop", true); err != nil { // the receiver is on loopback
		panic(err)
	}

	q, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix})
	if err != nil {
		panic(err)
	}
	defer q.Close()
	d, err := callback.NewDeliverer(callback.DelivererConfig{Queue: q, Redis: env.Client})
	if err != nil {
		panic(err)
	}
	if err := d.Start(ctx); err != nil {
		panic(err)
	}
	defer d.Stop()

	res, err := q.Publish(ctx, queue.PublishParams{
		Namespace: "shop", Queue: "orders", Payload: []byte(`{"order":42}`), Delay: 50 * time.Millisecond,
		Callback: &queue.Callback{URL: receiver.URL + "/hooks/close"},
	})
	if err != nil {
		panic(err)
	}
	<-done
	for {
		job, err := q.Get(ctx, "shop", "orders", res.ID)
		if err != nil {
			panic(err)
		}
		if job.State == queue.StateDone {
			fmt.Printf("%s: %s\n", job.State, job.Result)
			break
		}
		time.Sleep(5 * time.Millisecond) // the pace of this poll (an example has no test to fail)
	}
	// Output:
	// verified {"order":42}
	// done: order closed
}

func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"order":42}`)
	h := http.Header{}
	callback.Sign(h, []string{secret}, "01JOBID", time.Now(), body) // what the deliverer sends

	fmt.Println(callback.Verify(secret, h, body))
	fmt.Println(callback.Verify(secret, h, []byte(`{"order":43}`)))
	// Output:
	// <nil>
	// callback: webhook signature does not match
}
