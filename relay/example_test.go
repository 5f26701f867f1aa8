package relay_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

// Queue calls to a slow endpoint: at most 2 at once and 5 per second. A Dispatcher makes the
// calls and keeps their results; the caller waits for the result with a long poll.
func Example() {
	env, cleanup := redistest.ForExample("relay-Example")
	defer cleanup()
	ctx := context.Background()

	// The slow service (here on loopback, hence AllowPrivate below).
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "rendered %s", r.URL.Query().Get("scene"))
	}))
	defer slow.Close()

	c, err := relay.NewClient(env.Client, relay.Config{Prefix: env.Prefix})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.SetEndpoint(ctx, relay.Endpoint{
		Name: "render", TargetURL: slow.URL + "/render", QPS: 5, Concurrency: 2, AvgDuration: time.Second,
	}); err != nil {
		panic(err)
	}

	d, err := relay.NewDispatcher(c, relay.DispatcherConfig{AllowPrivate: true})
	if err != nil {
		panic(err)
	}
	if err := d.Start(ctx); err != nil {
		panic(err)
	}
	defer d.Stop()

	res, err := c.Submit(ctx, relay.SubmitParams{
		TargetURL: slow.URL + "/render", Method: http.MethodGet,
		Query: map[string][]string{"scene": {"lighthouse"}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("endpoint:", res.Endpoint, "status:", res.Status)

	task, err := c.Wait(ctx, res.ID, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.Status, task.HTTPStatus, string(task.Result), task.ResultHeader.Get("Content-Type"))
	// Output:
	// endpoint: render status: pending
	// completed 200 rendered lighthouse text/plain
}

// An online task calls the endpoint itself once it is its turn, with a single-use permit that
// the endpoint checks with RequirePermit.
func ExampleRequirePermit() {
	env, cleanup := redistest.ForExample("relay-ExampleRequirePermit")
	defer cleanup()
	ctx := context.Background()

	c, err := relay.NewClient(env.Client, relay.Config{
		Prefix:     env.Prefix,
		PermitKeys: [][]byte{[]byte("a 32-byte (or longer) secret key")},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// The endpoint guards its handler: only calls with a valid, unused permit of this endpoint
	// ("llm") get through.
	llm := httptest.NewServer(relay.RequirePermit(c, "llm", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "answer")
	})))
	defer llm.Close()
	if _, err := c.SetEndpoint(ctx, relay.Endpoint{Name: "llm", TargetURL: llm.URL, Concurrency: 1}); err != nil {
		panic(err)
	}
	d, err := relay.NewDispatcher(c, relay.DispatcherConfig{})
	if err != nil {
		panic(err)
	}
	if err := d.Start(ctx); err != nil {
		panic(err)
	}
	defer d.Stop()

	res, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "llm", Type: relay.Online})
	if err != nil {
		panic(err)
	}
	task, err := c.Wait(ctx, res.ID, 10*time.Second) // returns once permitted
	if err != nil {
		panic(err)
	}
	fmt.Println(task.Status)

	call := func() int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, llm.URL, nil)
		req.Header.Set(relay.PermitHeader, task.Permit)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println("first call:", call())
	fmt.Println("same permit again:", call())
	if err := c.Done(ctx, task.ID, task.Permit, relay.DoneParams{HTTPStatus: 200}); err != nil {
		panic(err)
	}
	task, _ = c.Get(ctx, task.ID)
	fmt.Println(task.Status)
	// Output:
	// permitted
	// first call: 200
	// same permit again: 403
	// completed
}

// A backend grants one user a higher priority than their token allows; the client passes the
// grant through and cannot raise it.
func ExampleSignGrant() {
	key := []byte("the backend's 32-byte grant key!")
	grant := relay.SignGrant(key, "user-42", 50, time.Now().Add(time.Hour))
	p, err := relay.VerifyGrant([][]byte{key}, grant, "user-42", time.Now())
	fmt.Println(p, err)
	_, err = relay.VerifyGrant([][]byte{key}, grant, "user-43", time.Now())
	fmt.Println(err)
	// Output:
	// 50 <nil>
	// relay: invalid priority grant
}

// Call an endpoint's service yourself within its limits: a slot counts against the endpoint's
// Concurrency and QPS together with its tasks (the callback deliverer takes one per callback under
// the endpoint's target URL).
func ExampleClient_AcquireSlot() {
	env, cleanup := redistest.ForExample("relay-ExampleAcquireSlot")
	defer cleanup()
	ctx := context.Background()
	c, err := relay.NewClient(env.Client, relay.Config{Prefix: env.Prefix})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.SetEndpoint(ctx, relay.Endpoint{Name: "orders", TargetURL: "https://orders.example.com/api", QPS: 20, Concurrency: 1}); err != nil {
		panic(err)
	}

	// The holder names the call; the slot frees itself after hold should this process die.
	slot, err := c.AcquireSlot(ctx, "orders", "job-42/1", 10*time.Second)
	if err != nil {
		panic(err)
	}
	st, _ := c.Stats(ctx, "orders")
	fmt.Println("running:", st.Running, "slots:", st.Slots)

	// ... make the call ...
	if err := slot.Release(ctx); err != nil {
		panic(err)
	}
	st, _ = c.Stats(ctx, "orders")
	fmt.Println("running:", st.Running, "released:", st.SlotsReleased)

	_, err = c.AcquireSlot(ctx, "orders", "job-43/1", 0)
	fmt.Println(err)
	// Output:
	// running: 1 slots: 1
	// running: 0 released: 1
	// relay: hold: must be at least 1ms
}
