package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue/internal/store"
)

// MaxCallbackAttempts is how many tries of a callback job are kept (the latest); the list lasts
// as long as the dead letter keeps a job (Config.DeadRetention) after the last try.
const MaxCallbackAttempts = 50

// maxAttemptError bounds the error text an attempt keeps.
const maxAttemptError = 300

// CallbackAttempt is one try of a callback job, as the deliverer recorded it.
type CallbackAttempt struct {
	// At is when the call was sent.
	At time.Time `json:"-"`
	// Delivery is the delivery number of the try.
	Delivery int `json:"delivery"`
	// Status is the HTTP status (0 when no response arrived, or no call was made).
	Status int `json:"status"`
	// Latency is the call, from sending to the end of the response body.
	Latency time.Duration `json:"-"`
	// Error is what went wrong, "" when the try delivered.
	Error string `json:"error,omitempty"`
	// Outcome is what became of the job: "delivered", "retried", "dead" or "expired". It is set
	// when the try is recorded, whatever FinishCallback was given.
	Outcome string `json:"outcome"`
}

// attemptRecord is how an attempt is stored: times in ms.
type attemptRecord struct {
	CallbackAttempt
	AtMs      int64 `json:"at_ms"`
	LatencyUs int64 `json:"latency_us"`
}

// FinishCallbackParams end a callback job's delivery and record the try.
type FinishCallbackParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
	// Attempt is the try to record (its Delivery and Outcome are filled in).
	Attempt CallbackAttempt
	// Delivered acks the delivery with Result (the response body; nil keeps an empty result).
	Delivered bool
	Result    []byte
	// Otherwise the delivery failed, as Nack: Error (Attempt.Error when empty), RetryAfter,
	// NoRetry.
	Error      string
	RetryAfter *time.Duration
	NoRetry    bool
}

// FinishCallback acks or nacks a callback delivery and records the try in the job's list of
// attempts, in one script call: the list never shows a try whose outcome was not recorded, nor
// misses one that was. It returns the outcome ("delivered", or a NackOutcome), or ErrNotFound or
// ErrLeaseLost (then nothing is recorded). A failed try's span in ctx (a deliverer that traces)
// is kept with the job, so the next try's span links to it, as Nack keeps a worker's.
func (c *Client) FinishCallback(ctx context.Context, p FinishCallbackParams) (string, error) {
	retry, err := failedDelivery(p.Namespace, p.Queue, p.ID, p.Delivery, p.RetryAfter)
	if err != nil {
		return "", err
	}
	a := p.Attempt
	a.Delivery, a.Outcome = p.Delivery, ""
	if len(a.Error) > maxAttemptError {
		a.Error = a.Error[:maxAttemptError] + "…"
	}
	entry, _ := json.Marshal(attemptRecord{CallbackAttempt: a, AtMs: a.At.UnixMilli(), LatencyUs: a.Latency.Microseconds()}) // plain fields: cannot fail
	errText := p.Error
	if errText == "" {
		errText = a.Error
	}
	result, span := p.Result, ""
	if p.Delivered && result == nil {
		result = []byte{}
	}
	if !p.Delivered { // the failed try's span (ctx's), for the next try's span to link to
		span = c.tracer.AttemptRef(ctx, p.Delivery)
	}
	out, err := c.store.FinishCallback(ctx, p.Namespace, p.Queue, p.ID, p.Delivery, store.CallbackTry{
		Entry: string(entry), Ack: p.Delivered, Result: result, Error: errText, RetryMs: retry, NoRetry: p.NoRetry,
		Keep: MaxCallbackAttempts, KeepMs: c.cfg.DeadRetention.Milliseconds(), Span: span,
	})
	if err != nil {
		return "", leaseError("finish callback", err)
	}
	return out, nil
}

// CallbackAttempts returns the recorded tries of a callback job, newest first (at most
// MaxCallbackAttempts); none for a job that never had one, or whose list expired.
func (c *Client) CallbackAttempts(ctx context.Context, ns, q, id string) ([]CallbackAttempt, error) {
	if err := validateQueue(ns, q); err != nil {
		return nil, err
	}
	if err := validateID(id); err != nil {
		return nil, err
	}
	raw, err := c.store.CallbackTries(ctx, ns, q, id)
	if err != nil {
		return nil, fmt.Errorf("queue: callback attempts: %w", err)
	}
	out := make([]CallbackAttempt, 0, len(raw))
	for _, s := range raw {
		var r attemptRecord
		if json.Unmarshal([]byte(s), &r) != nil {
			continue // written by FinishCallback: not reached
		}
		a := r.CallbackAttempt
		a.At, a.Latency = time.UnixMilli(r.AtMs), time.Duration(r.LatencyUs)*time.Microsecond
		out = append(out, a)
	}
	return out, nil
}
