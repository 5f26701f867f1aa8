package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

// Callback is a task's completion callback (SubmitParams.Callback): when the task ends (completed,
// failed, cancelled or timeout), its final state is POSTed to URL, signed with the namespace's
// Standard Webhooks secret and retried like any callback. The request queue hands it to
// Config.Completions, which delivers it (package callback's TaskCallbacks: a callback job of the
// job queue, sent by the callback deliverer).
type Callback struct {
	// URL is the absolute http or https URL to call, under one of the namespace's allowed
	// callback destinations. At most 2048 bytes.
	URL string
	// Header is sent with the call (at most 32 entries; the Standard Webhooks headers, Host and
	// the framing headers are the deliverer's).
	Header map[string]string
	// Timeout bounds one call. Default 30s; at most 5m.
	Timeout time.Duration
}

// callbackRecord is how a callback is kept in the task hash (field cb).
type callbackRecord struct {
	URL       string            `json:"url"`
	Header    map[string]string `json:"headers,omitempty"`
	TimeoutMs int64             `json:"timeout_ms"`
}

func (cb Callback) encode() string {
	b, _ := json.Marshal(callbackRecord{URL: cb.URL, Header: cb.Header, TimeoutMs: cb.Timeout.Milliseconds()}) // strings: cannot fail
	return string(b)
}

func decodeCallback(s string) *Callback {
	var r callbackRecord
	if s == "" || json.Unmarshal([]byte(s), &r) != nil {
		return nil
	}
	return &Callback{URL: r.URL, Header: r.Header, Timeout: time.Duration(r.TimeoutMs) * time.Millisecond}
}

// checkCallback checks a callback's form (the rules of job callbacks, internal/outbound) and that
// it can be delivered (Config.Completions, a namespace), and returns it with its defaults filled
// in, as a copy: the caller's stays as it was.
func (c *Client) checkCallback(namespace string, cb *Callback) (*Callback, error) {
	switch {
	case c.cfg.Completions == nil:
		return nil, fieldErr("callback", "completion callbacks need Config.Completions (a callback.TaskCallbacks)")
	case namespace == "":
		return nil, fieldErr("callback", "a task with a callback needs a Namespace, whose callback settings allow and sign it")
	}
	timeout, err := outbound.CheckCallback(cb.URL, cb.Header, cb.Timeout)
	var ce *outbound.CallbackError
	if errors.As(err, &ce) {
		return nil, fieldErr("callback."+ce.Part, "%s", ce.Message)
	}
	out := *cb
	out.Timeout = timeout
	return &out, nil
}

// CheckCallback checks a completion callback as Submit does (its form, then Config.Completions:
// the namespace's allowed destinations) and submits nothing: for callers that check every task of
// a batch before they submit any.
func (c *Client) CheckCallback(ctx context.Context, namespace string, cb Callback) error {
	checked, err := c.checkCallback(namespace, &cb)
	if err != nil {
		return err
	}
	return c.cfg.Completions.CheckCallback(ctx, namespace, *checked)
}

// CompletionSink delivers the completion callbacks of ended tasks (Config.Completions). Package
// callback's TaskCallbacks is the one Sluice ships: it checks a callback against the namespace's
// allowed destinations and publishes each completion as a callback job. An implementation must be
// safe for concurrent use.
type CompletionSink interface {
	// CheckCallback is asked at Submit whether namespace may have cb called: nil, or an error
	// that refuses the task (a *sluice.FieldError naming callback.url for a URL the namespace may
	// not call). Nothing is written before it answers.
	CheckCallback(ctx context.Context, namespace string, cb Callback) error
	// PutCompletions takes ended tasks (each with its Callback) for delivery of their completion
	// callbacks. Two processes may hand the same task on, and a process that dies between handing
	// on and forgetting a task hands it on again: an implementation should deduplicate by task ID
	// where it can (a receiver still sees a callback at least once). An error leaves the tasks to
	// be handed on again later.
	PutCompletions(ctx context.Context, tasks ...Task) error
}

// completionBatch is the most completion callbacks one maintenance pass hands on per endpoint.
const completionBatch = 500

// completionClaim is how long a claimed completion callback is left to its claimer before another
// process may claim it: far longer than a hand-off takes (one publish), and the wait before a
// callback that a failed hand-off left is tried again.
const completionClaim = 5 * time.Second

// forwardCompletions hands the due completion callbacks of an endpoint to Config.Completions:
// claim (completions_claim.lua), hand on, forget (handed_off.lua). A claim keeps concurrent
// maintenance passes from handing the same callbacks on; a process that dies after handing them
// on and before forgetting them leaves them to be claimed again when its claim ends (at least
// once). It returns how many were handed on.
func (c *Client) forwardCompletions(ctx context.Context, endpoint string) (int, error) {
	sink := c.cfg.Completions
	if sink == nil {
		return 0, nil
	}
	raw, err := c.run(ctx, scriptClaimCompletions, endpoint, completionBatch, ms(completionClaim)).Slice()
	if err != nil || len(raw) == 0 {
		if err != nil {
			err = fmt.Errorf("relay: claim completion callbacks of %s: %w", endpoint, err)
		}
		return 0, err
	}
	ended := make([]Task, 0, len(raw))
	ids := make([]any, 0, 1+len(raw))
	ids = append(ids, "completions")
	for _, r := range raw {
		f, _ := r.([]any)
		t := parseTask(f)
		ids = append(ids, t.ID)
		if t.Callback != nil && t.Status.Final() {
			ended = append(ended, t)
		}
	}
	if len(ended) > 0 {
		if err := sink.PutCompletions(ctx, ended...); err != nil {
			return 0, fmt.Errorf("relay: hand on completion callbacks of %s: %w", endpoint, err)
		}
	}
	if err := c.run(ctx, scriptHandedOff, endpoint, ids...).Err(); err != nil {
		return len(ended), fmt.Errorf("relay: forget handed-on completion callbacks of %s: %w", endpoint, err)
	}
	return len(ended), nil
}
