package queuetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// Opts narrow the job an assertion looks for, beyond its payload. A zero field is not checked.
type Opts struct {
	// State is the state the job must be in: queue.StateReady, StateDelayed or StateLeased.
	// "": any of them (every job that is not finished).
	State queue.State
	// Priority is the priority the job must have. 0: not checked (so a job of priority 0 is
	// matched by leaving it out).
	Priority int
	// MinDelay: the job must be due at least this long after it was published (a delay, or a
	// run-at this far ahead).
	MinDelay time.Duration
	// Attributes must each be on the job with this value; the job may carry more.
	Attributes map[string]string
	// UniqueKey is the unique key the job must hold.
	UniqueKey string
	// Tries is the number of deliveries the job must have been given.
	Tries int
}

// maxShown bounds the jobs a failure message lists.
const maxShown = 20

// RequireEnqueued fails the test unless queue q of namespace ns holds a pending job (ready,
// delayed or leased) whose payload equals payload and that matches opts (nil: no further check),
// and returns the first such job in the order consumers get them. Payloads that are both valid
// JSON compare as JSON values, so key order and spacing do not matter; a nil payload matches any.
// The failure message lists the jobs the queue held and what did not match on each.
func RequireEnqueued(ctx context.Context, tb testing.TB, c *queue.Client, ns, q string, payload []byte, opts *Opts) *queue.Job {
	tb.Helper()
	return requireEnqueued(ctx, tb, c, ns, q, describeBytes(payload), func(j *queue.Job) string {
		if payload != nil && !samePayload(j.Payload, payload) {
			return "payload"
		}
		return ""
	}, opts)
}

// RequireEnqueuedValue is RequireEnqueued for a typed queue: the job's payload, decoded with the
// queue's codec, must deeply equal *want (reflect.DeepEqual); a nil want matches any payload.
func RequireEnqueuedValue[T any](ctx context.Context, tb testing.TB, q *queue.Queue[T], want *T, opts *Opts) *queue.Job {
	tb.Helper()
	return requireEnqueued(ctx, tb, q.Client(), q.Namespace(), q.Name(), describeValue(want), valueMatch(q, want), opts)
}

// RequireNotEnqueued fails the test when queue q of namespace ns holds a pending job whose payload
// equals payload (nil: any payload) and that matches opts (nil: any job), listing the jobs that
// matched.
func RequireNotEnqueued(ctx context.Context, tb testing.TB, c *queue.Client, ns, q string, payload []byte, opts *Opts) {
	tb.Helper()
	requireNotEnqueued(ctx, tb, c, ns, q, describeBytes(payload), func(j *queue.Job) string {
		if payload != nil && !samePayload(j.Payload, payload) {
			return "payload"
		}
		return ""
	}, opts)
}

// RequireNotEnqueuedValue is RequireNotEnqueued for a typed queue (a nil want: any payload).
func RequireNotEnqueuedValue[T any](ctx context.Context, tb testing.TB, q *queue.Queue[T], want *T, opts *Opts) {
	tb.Helper()
	requireNotEnqueued(ctx, tb, q.Client(), q.Namespace(), q.Name(), describeValue(want), valueMatch(q, want), opts)
}

func valueMatch[T any](q *queue.Queue[T], want *T) func(*queue.Job) string {
	return func(j *queue.Job) string {
		if want == nil {
			return ""
		}
		v, err := q.Decode(j.Payload)
		if err != nil {
			return "payload (does not decode: " + err.Error() + ")"
		}
		if !reflect.DeepEqual(v, want) {
			return fmt.Sprintf("payload (decodes to %+v)", *v)
		}
		return ""
	}
}

func requireEnqueued(ctx context.Context, tb testing.TB, c *queue.Client, ns, q, what string, payloadMismatch func(*queue.Job) string, opts *Opts) *queue.Job {
	tb.Helper()
	res := pendingOf(ctx, tb, c, ns, q)
	var lines []string
	for i := range res.Jobs {
		j := &res.Jobs[i]
		miss := mismatches(j, payloadMismatch, opts)
		if len(miss) == 0 {
			return j
		}
		if len(lines) < maxShown {
			lines = append(lines, describeJob(j)+"\n      differs in: "+strings.Join(miss, ", "))
		}
	}
	tb.Fatalf("queuetest: no job in %s/%s with payload %s%s\n%s", ns, q, what, describeOpts(opts), held(res, lines))
	return nil
}

func requireNotEnqueued(ctx context.Context, tb testing.TB, c *queue.Client, ns, q, what string, payloadMismatch func(*queue.Job) string, opts *Opts) {
	tb.Helper()
	res := pendingOf(ctx, tb, c, ns, q)
	var lines []string
	for i := range res.Jobs {
		if j := &res.Jobs[i]; len(mismatches(j, payloadMismatch, opts)) == 0 && len(lines) < maxShown {
			lines = append(lines, describeJob(j))
		}
	}
	if len(lines) > 0 {
		tb.Fatalf("queuetest: %s/%s holds %d job(s) with payload %s%s, want none:\n%s",
			ns, q, len(lines), what, describeOpts(opts), strings.Join(lines, "\n"))
	}
}

// mismatches names the fields of j that opts or the payload rule out.
func mismatches(j *queue.Job, payloadMismatch func(*queue.Job) string, opts *Opts) []string {
	var miss []string
	if m := payloadMismatch(j); m != "" {
		miss = append(miss, m)
	}
	if opts == nil {
		return miss
	}
	if opts.State != "" && j.State != opts.State {
		miss = append(miss, "state")
	}
	if opts.Priority != 0 && j.Priority != opts.Priority {
		miss = append(miss, "priority")
	}
	if opts.MinDelay > 0 && j.DueAt.Sub(j.PublishedAt) < opts.MinDelay {
		miss = append(miss, "delay")
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Attributes)) {
		if v, ok := j.Attributes[k]; !ok || v != opts.Attributes[k] {
			miss = append(miss, "attribute "+k)
		}
	}
	if opts.UniqueKey != "" && j.UniqueKey != opts.UniqueKey {
		miss = append(miss, "unique key")
	}
	if opts.Tries != 0 && j.Tries != opts.Tries {
		miss = append(miss, "tries")
	}
	return miss
}

// samePayload compares payloads as JSON values when both are JSON, else byte for byte.
func samePayload(got, want []byte) bool {
	if bytes.Equal(got, want) {
		return true
	}
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil {
		return false
	}
	return reflect.DeepEqual(g, w)
}

// held describes what a queue held, for a failed assertion.
func held(res queue.PendingResult, lines []string) string {
	if res.Total == 0 {
		return "the queue holds no pending job"
	}
	s := fmt.Sprintf("the queue holds %d pending job(s):\n%s", res.Total, strings.Join(lines, "\n"))
	if shown := int64(len(lines)); shown < res.Total {
		s += fmt.Sprintf("\n  ... and %d more", res.Total-shown)
	}
	return s
}

func describeJob(j *queue.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - %s: %s, priority %d, tries %d, payload %s", j.ID, j.State, j.Priority, j.Tries, describeBytes(j.Payload))
	if d := j.DueAt.Sub(j.PublishedAt); d > 0 {
		fmt.Fprintf(&b, ", delay %s", d)
	}
	if len(j.Attributes) > 0 {
		fmt.Fprintf(&b, ", attributes %v", j.Attributes)
	}
	if j.UniqueKey != "" {
		fmt.Fprintf(&b, ", unique key %q", j.UniqueKey)
	}
	return b.String()
}

// describeBytes shows a payload as text when it is printable, bounded.
func describeBytes(p []byte) string {
	if p == nil {
		return "(any)"
	}
	const most = 200
	s, cut := p, ""
	if len(s) > most {
		s, cut = s[:most], fmt.Sprintf("... (%d bytes)", len(p))
	}
	return fmt.Sprintf("%q%s", s, cut)
}

func describeValue[T any](v *T) string {
	if v == nil {
		return "(any)"
	}
	return fmt.Sprintf("%+v", *v)
}

func describeOpts(o *Opts) string {
	if o == nil {
		return ""
	}
	var parts []string
	if o.State != "" {
		parts = append(parts, "state "+string(o.State))
	}
	if o.Priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %d", o.Priority))
	}
	if o.MinDelay > 0 {
		parts = append(parts, fmt.Sprintf("delay at least %s", o.MinDelay))
	}
	if len(o.Attributes) > 0 {
		parts = append(parts, fmt.Sprintf("attributes %v", o.Attributes))
	}
	if o.UniqueKey != "" {
		parts = append(parts, fmt.Sprintf("unique key %q", o.UniqueKey))
	}
	if o.Tries != 0 {
		parts = append(parts, fmt.Sprintf("tries %d", o.Tries))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}
