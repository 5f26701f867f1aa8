package relay_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// keyed is a submit of the endpoint "idem" by submitter tok of namespace ns with an idempotency
// key.
func keyed(ns, tok, key, body string) relay.SubmitParams {
	return relay.SubmitParams{Endpoint: "idem", Namespace: ns, Submitter: tok, IdempotencyKey: key, Body: []byte(body),
		Header: http.Header{"X-Order": {"42"}}}
}

// queued returns how many tasks wait at the endpoint.
func queued(t *testing.T, c *relay.Client, endpoint string) int64 {
	t.Helper()
	st, err := c.Stats(ctxT(t), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return st.Queued
}

func TestIdempotentResubmitReturnsTheFirstTask(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "idem", TargetURL: "http://127.0.0.1:9/"})

		first := submit(t, c, keyed("shop", "tok-a", "order-42", `{"n":1}`))
		if first.Duplicate {
			t.Fatalf("the first submit is a duplicate: %+v", first)
		}
		again := submit(t, c, keyed("shop", "tok-a", "order-42", `{"n":1}`))
		if !again.Duplicate || again.ID != first.ID || again.Status != relay.StatusPending ||
			!again.CreatedAt.Equal(first.CreatedAt) || again.Priority != first.Priority || again.WaitNum != 0 {
			t.Fatalf("resubmit = %+v, want the first task %+v as a duplicate", again, first)
		}
		if n := queued(t, c, "idem"); n != 1 {
			t.Fatalf("%d tasks queued after a resubmit, want 1", n)
		}

		// The same key with another body, method or header is another request: refused, and
		// nothing is created.
		for _, change := range []func(p *relay.SubmitParams){
			func(p *relay.SubmitParams) { p.Body = []byte(`{"n":2}`) },
			func(p *relay.SubmitParams) { p.Method = http.MethodPut },
			func(p *relay.SubmitParams) { p.Header.Set("X-Order", "43") },
			func(p *relay.SubmitParams) { p.Subject = "bob" },
			func(p *relay.SubmitParams) { p.Priority = 1 },
		} {
			p := keyed("shop", "tok-a", "order-42", `{"n":1}`)
			change(&p)
			if _, err := c.Submit(ctxT(t), p); !errors.Is(err, relay.ErrIdempotencyConflict) {
				t.Fatalf("same key, other request (%s %v %q %q %d): %v, want ErrIdempotencyConflict", p.Method, p.Header, p.Body, p.Subject, p.Priority, err)
			}
		}
		if n := queued(t, c, "idem"); n != 1 {
			t.Fatalf("%d tasks queued after conflicting resubmits, want 1", n)
		}

		// Once the task has ended, the key still answers with it, as it is now.
		if _, err := c.Cancel(ctxT(t), first.ID); err != nil {
			t.Fatal(err)
		}
		ended := submit(t, c, keyed("shop", "tok-a", "order-42", `{"n":1}`))
		if !ended.Duplicate || ended.ID != first.ID || ended.Status != relay.StatusCancelled || ended.WaitNum != -1 {
			t.Fatalf("resubmit after cancel = %+v, want the cancelled first task", ended)
		}
	})
}

// A key is the submitter's: the same key from another token or namespace never sees the first
// task (nor learns that it exists), it queues its own.
func TestIdempotencyKeyOfAnotherSubmitterIsAnotherRequest(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "idem", TargetURL: "http://127.0.0.1:9/"})

	first := submit(t, c, keyed("shop", "tok-a", "k1", "x"))
	ids := map[string]bool{first.ID: true}
	for _, p := range []relay.SubmitParams{keyed("shop", "tok-b", "k1", "x"), keyed("other", "tok-a", "k1", "x"),
		keyed("other", "tok-b", "k1", "x"), keyed("shop", "tok-a", "K1", "x")} {
		r := submit(t, c, p)
		if r.Duplicate || ids[r.ID] {
			t.Fatalf("key %q of %s/%s answered %+v: another submitter's task", p.IdempotencyKey, p.Namespace, p.Submitter, r)
		}
		ids[r.ID] = true
	}
	// Each submitter's resend finds its own task.
	if r := submit(t, c, keyed("shop", "tok-b", "k1", "x")); !r.Duplicate || r.ID == first.ID {
		t.Fatalf("tok-b's resend = %+v", r)
	}
	if n := queued(t, c, "idem"); n != 5 {
		t.Fatalf("%d tasks queued, want 5 (one per submitter and key)", n)
	}
}

// Resends sent at once (a client retrying while its first request is still under way) create one
// task: the check and the creation are one script, and concurrent submits of one process share
// script calls, within which the first task's record answers the others.
func TestConcurrentIdempotentSubmitsCreateOneTask(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		// Two clients: two processes, whose submits do not share script calls.
		a := newClient(t, env, relay.Config{})
		b := newClient(t, env, relay.Config{})
		setEndpoint(t, a, relay.Endpoint{Name: "idem", TargetURL: "http://127.0.0.1:9/"})
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[string]int{}
		created := 0
		for i := range 40 {
			c := a
			if i%2 == 1 {
				c = b
			}
			wg.Go(func() {
				r, err := c.Submit(ctxT(t), keyed("shop", "tok-a", "burst", "same"))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[r.ID]++
				if !r.Duplicate {
					created++
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(got) != 1 || created != 1 {
			t.Fatalf("40 concurrent submits with one key answered ids %v, %d created; want one id, created once", got, created)
		}
		if n := queued(t, a, "idem"); n != 1 {
			t.Fatalf("%d tasks queued, want 1", n)
		}
	})
}

// A malformed or huge key is a field error, and nothing is queued or recorded.
func TestMalformedIdempotencyKeysAreRefused(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "idem", TargetURL: "http://127.0.0.1:9/"})
	for _, key := range []string{strings.Repeat("k", relay.MaxIdempotencyKey+1), strings.Repeat("k", 1<<20), "has space",
		"tab\there", "line\nbreak", "nul\x00", "ünïcode"} {
		_, err := c.Submit(ctxT(t), keyed("shop", "tok-a", key, "x"))
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != "idempotency_key" {
			t.Fatalf("key %.20q: %v, want a field error naming idempotency_key", key, err)
		}
	}
	if n := queued(t, c, "idem"); n != 0 {
		t.Fatalf("%d tasks queued by refused keys", n)
	}
	if keys, err := env.Client.Keys(ctxT(t), env.Prefix+":relay:*idem:*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("idempotency records after refused keys: %v (%v)", keys, err)
	}
	// The longest key allowed works.
	if r := submit(t, c, keyed("shop", "tok-a", strings.Repeat("k", relay.MaxIdempotencyKey), "x")); r.Duplicate {
		t.Fatalf("a new key of %d bytes answered %+v", relay.MaxIdempotencyKey, r)
	}
}

// Past Config.IdempotencyRetention a key is forgotten: the same request creates a new task.
func TestIdempotencyKeyIsForgottenAfterItsRetention(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{IdempotencyRetention: 300 * time.Millisecond})
	setEndpoint(t, c, relay.Endpoint{Name: "idem", TargetURL: "http://127.0.0.1:9/"})
	first := submit(t, c, keyed("shop", "tok-a", "short", "x"))
	var later relay.SubmitResult
	testwait.Until(t, time.Minute, "the key to be forgotten", func() bool {
		later = submit(t, c, keyed("shop", "tok-a", "short", "x")) // a duplicate creates nothing
		return !later.Duplicate
	})
	if later.ID == first.ID {
		t.Fatalf("after the retention the key answered the first task %s", first.ID)
	}
	if n := queued(t, c, "idem"); n != 2 {
		t.Fatalf("%d tasks queued, want 2", n)
	}
}
