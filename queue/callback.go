package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// Limits on a job's callback (the request queue's completion callbacks share them).
const (
	// MaxCallbackURL bounds the length of Callback.URL.
	MaxCallbackURL = outbound.MaxCallbackURL
	// MaxCallbackHeaders bounds the number of Callback.Header entries.
	MaxCallbackHeaders = outbound.MaxCallbackHeaders
	// MaxCallbackHeaderValue bounds the length of one header value.
	MaxCallbackHeaderValue = outbound.MaxCallbackHeaderValue
	// DefaultCallbackTimeout is a callback's timeout when it names none.
	DefaultCallbackTimeout = outbound.DefaultCallbackTimeout
	// MaxCallbackTimeout bounds Callback.Timeout.
	MaxCallbackTimeout = outbound.MaxCallbackTimeout
	// callbackLeaseSlack is what a callback job's default lease adds to the callback's timeout, so
	// a deliverer that is alive never loses the lease of a call that is still allowed to run.
	callbackLeaseSlack = 5 * time.Second
)

// The Backoff of a callback job that names none: a destination that failed is not called again at
// once.
const (
	DefaultCallbackBackoffBase = time.Second
	DefaultCallbackBackoffMax  = 10 * time.Minute
)

// Callback makes a job a callback: when it is due, the deliverer (callback.Deliverer, run by
// `sluice server` or by a Go service itself) sends the job's payload to URL instead of handing the
// job to a consumer. A 2xx ends the job (done, with the response body as its result); a connection
// error, timeout, 5xx or 429 is a failed try (retried with the job's backoff, or after the
// Retry-After the destination asked for); any other status sends it to the dead letter at once.
type Callback struct {
	// URL is the absolute http or https URL to call. The deliverer also checks it against the
	// namespace's allowed prefixes before each call.
	URL string `json:"url"`
	// Method is the HTTP method. Default POST.
	Method string `json:"method,omitempty"`
	// Header is sent with the call. The Standard Webhooks headers (webhook-id, webhook-timestamp,
	// webhook-signature) are the deliverer's and cannot be set here, nor can Host or the framing
	// headers.
	Header map[string]string `json:"headers,omitempty"`
	// Timeout bounds one call. Default 30s; at most 5m. The job's lease (TTR) must be longer: by
	// default it is the longer of Config.DefaultTTR and Timeout + 5s. A callback job's Backoff
	// defaults to DefaultCallbackBackoffBase/Max rather than to retrying at once.
	Timeout time.Duration `json:"-"`
}

// callbackRecord is how a callback is stored with its job.
type callbackRecord struct {
	Callback
	TimeoutMs int64 `json:"timeout_ms"`
}

// validate checks the callback and fills in its defaults.
func (cb *Callback) validate() error {
	timeout, err := outbound.CheckCallback(cb.URL, cb.Header, cb.Timeout)
	var ce *outbound.CallbackError
	if errors.As(err, &ce) {
		return invalid("callback."+ce.Part, "%s", ce.Message)
	}
	cb.Timeout = timeout
	if cb.Method == "" {
		cb.Method = http.MethodPost
	}
	if !callbackMethods[cb.Method] {
		return invalid("callback.method", "%q is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", cb.Method)
	}
	return nil
}

func (cb Callback) encode() string {
	b, _ := json.Marshal(callbackRecord{Callback: cb, TimeoutMs: cb.Timeout.Milliseconds()}) // strings and a map of strings: cannot fail
	return string(b)
}

func decodeCallback(s string) *Callback {
	var r callbackRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return &Callback{URL: "", Method: http.MethodPost} // written by Publish from a struct: not reached
	}
	r.Timeout = time.Duration(r.TimeoutMs) * time.Millisecond
	return &r.Callback
}

// WithCallback makes the produced job a callback: it is delivered to cb.URL when due instead of
// to the queue's consumers (Callback).
func WithCallback(cb Callback) ProduceOption {
	return func(pp *PublishParams) { pp.Callback = &cb }
}

// QueueRef names one queue.
type QueueRef struct {
	Namespace string
	Queue     string
}

// CallbackJob is a leased job of a callback lane, handed to a deliverer. Ack (with the response as
// the result) or Nack it by its Delivery number like any delivery.
type CallbackJob struct {
	Delivery
	Callback Callback
	// DueAt is when the job became due; LeasedAt is when it was leased, by Redis's clock, so
	// LeasedAt - DueAt is how late the delivery started (never negative).
	DueAt    time.Time
	LeasedAt time.Time
	// LastError is the error of the previous try ("" on the first).
	LastError string
}

// CallbackBatch is what one ConsumeCallbacks call leased.
type CallbackBatch struct {
	Jobs []CallbackJob
	// More says jobs were left on the lane: call again without waiting.
	More bool
	// Wake is how long until time next changes something in the queue (a delayed job comes due or
	// a lease ends, its own included); 0 when nothing is scheduled.
	Wake time.Duration
}

// ConsumeCallbacks leases up to count jobs (1..1000) of the callback lane of one queue, running the
// queue's housekeeping first so that due callback jobs come in. It is the deliverer's read; ordinary
// consumers never get callback jobs. One script call.
func (c *Client) ConsumeCallbacks(ctx context.Context, ns, q string, count int) (CallbackBatch, error) {
	if err := validateQueue(ns, q); err != nil {
		return CallbackBatch{}, err
	}
	if count < 1 || count > MaxConsumeCount {
		return CallbackBatch{}, invalid("count", "%d is outside 1..%d", count, MaxConsumeCount)
	}
	leased, err := c.store.ConsumeCallbacks(ctx, ns, q, count)
	if err != nil {
		return CallbackBatch{}, fmt.Errorf("queue: consume callbacks %s/%s: %w", ns, q, err)
	}
	out := CallbackBatch{Jobs: make([]CallbackJob, 0, len(leased.Jobs)), More: leased.More}
	if leased.Next > 0 {
		out.Wake = max(time.Duration(leased.Next-leased.Now)*time.Millisecond, time.Millisecond)
	}
	for i := range leased.Jobs {
		j := jobOf(ns, q, &leased.Jobs[i])
		d := j.delivery()
		d.Elapsed = time.Duration(leased.Now-d.PublishedAt.UnixMilli()) * time.Millisecond
		cj := CallbackJob{Delivery: d, DueAt: j.DueAt, LeasedAt: time.UnixMilli(leased.Now), LastError: j.LastError}
		if j.Callback != nil {
			cj.Callback = *j.Callback
		}
		out.Jobs = append(out.Jobs, cj)
	}
	return out, nil
}

// CallbackQueues lists the queues that have had callback jobs: the ones a deliverer visits.
func (c *Client) CallbackQueues(ctx context.Context) ([]QueueRef, error) {
	names, err := c.store.CallbackQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: callback queues: %w", err)
	}
	return queueRefs(names), nil
}

func queueRefs(names []store.QueueName) []QueueRef {
	out := make([]QueueRef, len(names))
	for i, n := range names {
		out[i] = QueueRef(n)
	}
	return out
}

// CallbackChannel is the Pub/Sub channel on which the queue announces callback work: a job put on
// a callback lane, or a new earliest delayed callback job. ParseCallbackNotification reads its
// messages.
func (c *Client) CallbackChannel() string { return c.store.CallbackChannel() }

// ParseCallbackNotification returns the queue a message of CallbackChannel names.
func ParseCallbackNotification(msg string) (QueueRef, bool) {
	name, ok := store.ParseHashTag(msg)
	if !ok || !validName(name.Namespace) || !validName(name.Queue) {
		return QueueRef{}, false
	}
	return QueueRef(name), true
}

// callbackMethods are the methods a callback may use: those of a request-queue task (relay). A
// CONNECT would open a tunnel, and methods match case-sensitively ("post" is not POST).
var callbackMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}
