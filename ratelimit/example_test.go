package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// A GCRA limiter: 3 requests a minute per user, then one every 20 seconds.
func ExampleLimiter_Allow() {
	client, prefix, done := exampleRedis() // your redis.NewClient(...), and usually no prefix
	defer done()

	limiter, err := ratelimit.New(client, ratelimit.Config{
		Limit:  ratelimit.PerMinute(3),
		Prefix: prefix,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 4 {
		res, err := limiter.Allow(ctx, "user:42")
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry_after=%s\n",
			res.Allowed, res.Remaining, res.RetryAfter.Round(time.Second))
	}
	// Output:
	// allowed=true remaining=2 retry_after=0s
	// allowed=true remaining=1 retry_after=0s
	// allowed=true remaining=0 retry_after=0s
	// allowed=false remaining=0 retry_after=20s
}

// Requests that fail can be given back, so only the ones that did work count.
func ExampleLimiter_Refund() {
	client, prefix, done := exampleRedis()
	defer done()

	limiter, err := ratelimit.New(client, ratelimit.Config{
		Algorithm: ratelimit.FixedWindow,
		Limit:     ratelimit.PerHour(100),
		Name:      "write",
		Prefix:    prefix,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, _ := limiter.AllowN(ctx, "token:abc", 10)
	fmt.Println("remaining after 10:", res.Remaining)
	// ... the batch failed:
	if err := limiter.Refund(ctx, "token:abc", 10); err != nil {
		panic(err)
	}
	res, _ = limiter.Allow(ctx, "token:abc")
	fmt.Println("remaining after the refund and 1 more:", res.Remaining)
	// Output:
	// remaining after 10: 90
	// remaining after the refund and 1 more: 99
}

// HTTP middleware: 2 requests a minute per client IP, with the standard headers.
func ExampleLimiter_Middleware() {
	client, prefix, done := exampleRedis()
	defer done()

	limiter, err := ratelimit.New(client, ratelimit.Config{Limit: ratelimit.PerMinute(2), Prefix: prefix})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") })
	handler := limiter.Middleware(ratelimit.MiddlewareConfig{Key: ratelimit.KeyByIP})(hello)

	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "198.51.100.7:40000"
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		h := rec.Header()
		fmt.Printf("%d limit=%s remaining=%s retry-after=%q\n", rec.Code,
			h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("Retry-After"))
	}
	// Output:
	// 200 limit=2 remaining=1 retry-after=""
	// 200 limit=2 remaining=0 retry-after=""
	// 429 limit=2 remaining=0 retry-after="30"
}

// A distributed semaphore: at most 2 exports run at once across all processes.
func ExampleConcurrency() {
	client, prefix, done := exampleRedis()
	defer done()

	sem, err := ratelimit.NewConcurrency(client, ratelimit.ConcurrencyConfig{Prefix: prefix})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	a, _ := sem.Acquire(ctx, "exports", 2, time.Minute)
	b, _ := sem.Acquire(ctx, "exports", 2, time.Minute)
	c, _ := sem.Acquire(ctx, "exports", 2, time.Minute)
	fmt.Println(a.Acquired, b.Acquired, c.Acquired, c.RetryAfter.Round(time.Minute))

	// The first export is done; a waiter is woken at once.
	if err := sem.Release(ctx, "exports", a.LeaseID); err != nil {
		panic(err)
	}
	d, err := sem.AcquireWait(ctx, "exports", 2, time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Acquired, d.Held)
	// Output:
	// true true false 1m0s
	// true 2
}
