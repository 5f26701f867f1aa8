package jobs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"

	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/queue"
)

// attrEncoding marks a job published with payload_base64, so consumers get payload_base64 back
// even when the bytes happen to be valid JSON.
const attrEncoding = httpapi.ReservedAttrPrefix + "encoding"

// maxPublishBatch bounds the jobs of one publish request.
const maxPublishBatch = 1000

// maxTries bounds a job's tries: the engine keeps them as Lua numbers, which lose integers past
// 2^53 (a tries of 2^63-1 came back as -2^63).
const maxTries = math.MaxInt32

// publishJob is one job of a publish request.
type publishJob struct {
	Payload       json.RawMessage   `json:"payload"`
	PayloadBase64 *string           `json:"payload_base64"`
	Priority      *int              `json:"priority"`
	Delay         *float64          `json:"delay"`
	RunAt         *string           `json:"run_at"`
	Tries         *int              `json:"tries"`
	TTL           *float64          `json:"ttl"`
	TTR           *float64          `json:"ttr"`
	Backoff       *backoffJSON      `json:"backoff"`
	UniqueKey     *string           `json:"unique_key"`
	UniqueFor     *float64          `json:"unique_for"`
	Attributes    map[string]string `json:"attributes"`
	Callback      *CallbackJSON     `json:"callback"`
}

// CallbackJSON is a job's callback: where Sluice sends the job when it is due (docs/callbacks.md).
// Timeout is in seconds.
type CallbackJSON struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Timeout *float64          `json:"timeout,omitempty"`
}

type backoffJSON struct {
	Base *float64 `json:"base"`
	Max  *float64 `json:"max"`
}

// publishRequest is one job, or a batch under "jobs".
type publishRequest struct {
	publishJob
	Jobs []publishJob `json:"jobs"`
}

func (j *publishJob) empty() bool {
	return j.Payload == nil && j.PayloadBase64 == nil && j.Priority == nil && j.Delay == nil && j.RunAt == nil &&
		j.Tries == nil && j.TTL == nil && j.TTR == nil && j.Backoff == nil && j.UniqueKey == nil &&
		j.UniqueFor == nil && j.Attributes == nil && j.Callback == nil
}

// PublishResult is the answer to a publish: one, or one per job of a batch under "jobs".
type PublishResult struct {
	JobID     string `json:"job_id"`
	Duplicate bool   `json:"duplicate"`
}

// publish is POST /v1/ns/{ns}/queues/{q}/jobs.
func (a *API) publish(w http.ResponseWriter, r *http.Request) error {
	tok, _ := tenant.FromContext(r.Context())
	var req publishRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	ns, q := r.PathValue("ns"), r.PathValue("q")
	if req.Jobs == nil {
		p, err := req.params(tok, ns, q, "")
		if err != nil {
			return err
		}
		if err := a.checkCallbacks(r.Context(), ns, []queue.PublishParams{p}, false); err != nil {
			return err
		}
		res, err := a.queue.Publish(r.Context(), p)
		if err != nil {
			return err
		}
		writePublished(w, PublishResult{JobID: res.ID, Duplicate: res.Duplicate})
		return nil
	}
	if !req.empty() {
		return httpapi.InvalidArg("jobs", "give either one job or a jobs array, not both")
	}
	if len(req.Jobs) == 0 || len(req.Jobs) > maxPublishBatch {
		return httpapi.InvalidArg("jobs", "%d jobs; a batch has 1..%d", len(req.Jobs), maxPublishBatch)
	}
	ps := make([]queue.PublishParams, len(req.Jobs))
	for i := range req.Jobs {
		p, err := req.Jobs[i].params(tok, ns, q, fmt.Sprintf("jobs[%d]", i))
		if err != nil {
			return err
		}
		ps[i] = p
	}
	if err := a.checkCallbacks(r.Context(), ns, ps, true); err != nil {
		return err
	}
	res, err := a.queue.PublishMany(r.Context(), ps)
	if err != nil {
		return err
	}
	out := make([]PublishResult, len(res))
	for i, x := range res {
		out[i] = PublishResult{JobID: x.ID, Duplicate: x.Duplicate}
	}
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"jobs": out})
	return nil
}

// params validates one job and turns it into the engine's parameters; field names carry prefix.
func (j *publishJob) params(tok tenant.Token, ns, q, prefix string) (queue.PublishParams, error) {
	f := func(name string) string { return prefixed(prefix, name) }
	p := queue.PublishParams{Namespace: ns, Queue: q}
	switch {
	case j.Payload != nil && j.PayloadBase64 != nil:
		return p, httpapi.InvalidArg(f("payload"), "give payload or payload_base64, not both")
	case j.Payload != nil:
		p.Payload = []byte(j.Payload)
	case j.PayloadBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*j.PayloadBase64)
		if err != nil {
			return p, httpapi.InvalidArg(f("payload_base64"), "not standard base64: %v", err)
		}
		p.Payload = b
	default:
		return p, httpapi.InvalidArg(f("payload"), "give payload (any JSON value) or payload_base64 (bytes)")
	}
	if j.Priority != nil {
		p.Priority = *j.Priority
		if p.Priority < 0 || p.Priority > queue.MaxPriority {
			return p, httpapi.InvalidArg(f("priority"), "%d is outside 0..%d", p.Priority, queue.MaxPriority)
		}
		if tok.MaxPriority >= 0 && p.Priority > tok.MaxPriority {
			p.Priority = tok.MaxPriority // the token's cap: clients cannot raise their own priority
		}
	}
	var err error
	if p.Delay, err = httpapi.Seconds(f("delay"), j.Delay); err != nil {
		return p, err
	}
	if j.RunAt != nil {
		if j.Delay != nil {
			return p, httpapi.InvalidArg(f("run_at"), "give delay or run_at, not both")
		}
		if p.RunAt, err = time.Parse(time.RFC3339Nano, *j.RunAt); err != nil {
			return p, httpapi.InvalidArg(f("run_at"), "%q is not an RFC 3339 time (2026-01-02T15:04:05Z)", *j.RunAt)
		}
		// The engine reads a zero time as "no run_at", so year 1 must be refused here.
		if p.RunAt.UnixMilli() <= 0 {
			return p, httpapi.InvalidArg(f("run_at"), "must be after 1970")
		}
	}
	if j.Tries != nil {
		if *j.Tries < 1 || *j.Tries > maxTries {
			return p, httpapi.InvalidArg(f("tries"), "%d is outside 1..%d", *j.Tries, maxTries)
		}
		p.Tries = *j.Tries
	}
	if p.TTL, err = atLeastMilli(f("ttl"), j.TTL, "no ttl"); err != nil {
		return p, err
	}
	if p.TTR, err = atLeastMilli(f("ttr"), j.TTR, ""); err != nil {
		return p, err
	}
	if j.Backoff != nil {
		if p.Backoff.Base, err = httpapi.Seconds(f("backoff.base"), j.Backoff.Base); err != nil {
			return p, err
		}
		if p.Backoff.Max, err = httpapi.Seconds(f("backoff.max"), j.Backoff.Max); err != nil {
			return p, err
		}
	}
	if j.UniqueKey != nil {
		if *j.UniqueKey == "" {
			return p, httpapi.InvalidArg(f("unique_key"), "must not be empty (leave it out for no dedup)")
		}
		p.UniqueKey = *j.UniqueKey
	}
	if p.UniqueFor, err = httpapi.Seconds(f("unique_for"), j.UniqueFor); err != nil {
		return p, err
	}
	for k := range j.Attributes {
		if strings.HasPrefix(k, httpapi.ReservedAttrPrefix) {
			return p, httpapi.InvalidArg(f("attributes"), "keys starting with %q are reserved", httpapi.ReservedAttrPrefix)
		}
	}
	p.Attributes = j.Attributes
	if c := j.Callback; c != nil {
		timeout, err := atLeastMilli(f("callback.timeout"), c.Timeout, "the default of 30")
		if err != nil {
			return p, err
		}
		p.Callback = &queue.Callback{URL: c.URL, Method: c.Method, Header: c.Headers, Timeout: timeout}
	}
	// The encoding mark is only needed for bytes that would otherwise come back as JSON; it counts
	// against the engine's MaxAttributes, so it is left off when it is not needed.
	if j.PayloadBase64 != nil && isJSONText(p.Payload) {
		if len(j.Attributes) >= queue.MaxAttributes {
			return p, httpapi.InvalidArg(f("attributes"), "a payload_base64 whose bytes are valid JSON takes one of the %d attributes "+
				"(the server marks it as bytes): give at most %d", queue.MaxAttributes, queue.MaxAttributes-1)
		}
		p.Attributes = make(map[string]string, len(j.Attributes)+1)
		for k, v := range j.Attributes {
			p.Attributes[k] = v
		}
		p.Attributes[attrEncoding] = "base64"
	}
	return p, nil
}

// checkCallbacks refuses callbacks whose URL is not under one of the namespace's allowed
// destinations (one settings read per request), naming the job's field.
func (a *API) checkCallbacks(ctx context.Context, ns string, ps []queue.PublishParams, batch bool) error {
	if a.cfg.CallbackDestinations == nil {
		return nil
	}
	var allowed []string
	read := false
	for i, p := range ps {
		if p.Callback == nil {
			continue
		}
		if !read {
			var err error
			if allowed, err = a.cfg.CallbackDestinations(ctx, ns); err != nil {
				return err
			}
			read = true
		}
		if !outbound.UnderPrefix(p.Callback.URL, allowed...) {
			field := "callback.url"
			if batch {
				field = fmt.Sprintf("jobs[%d].callback.url", i)
			}
			return httpapi.InvalidArg(field, "%q is not under any of the namespace's allowed callback destinations (admin API: /v1/namespaces/%s/callbacks)", p.Callback.URL, ns)
		}
	}
	return nil
}

// payloadJSON renders stored bytes: as a JSON value when they are valid JSON and were not
// published as bytes, else as base64.
type payloadJSON struct {
	JSON   json.RawMessage
	Base64 *string
}

func encodePayload(b []byte, attrs map[string]string) payloadJSON {
	if attrs[attrEncoding] != "base64" && isJSONText(b) {
		return payloadJSON{JSON: b}
	}
	s := base64.StdEncoding.EncodeToString(b)
	return payloadJSON{Base64: &s}
}

// isJSONText reports whether b can be sent as a JSON value: valid JSON and valid UTF-8 (json.Valid
// lets invalid UTF-8 inside strings pass, and a response carrying it is not JSON).
func isJSONText(b []byte) bool {
	return len(b) > 0 && json.Valid(b) && utf8.Valid(b)
}

// JobJSON is a job as GET and the dead letter list show it. The exported answer types are the
// wire shapes, for Go clients and tests.
type JobJSON struct {
	JobID          string            `json:"job_id"`
	Namespace      string            `json:"namespace"`
	Queue          string            `json:"queue"`
	State          string            `json:"state"`
	Position       *int              `json:"position,omitempty"`
	Priority       int               `json:"priority"`
	Tries          int               `json:"tries"`
	RemainingTries int               `json:"remaining_tries"`
	Deliveries     int               `json:"deliveries"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64  *string           `json:"payload_base64,omitempty"`
	Attributes     map[string]string `json:"attributes"`
	UniqueKey      string            `json:"unique_key,omitempty"`
	TTL            float64           `json:"ttl,omitempty"`
	TTR            float64           `json:"ttr"`
	Backoff        *BackoffJSON      `json:"backoff,omitempty"`
	LastError      string            `json:"last_error,omitempty"`
	Result         json.RawMessage   `json:"result,omitempty"`
	ResultBase64   *string           `json:"result_base64,omitempty"`
	PublishedAt    time.Time         `json:"published_at"`
	DueAt          *time.Time        `json:"due_at,omitempty"`
	LeaseUntil     *time.Time        `json:"lease_until,omitempty"`
	ExpiresAt      *time.Time        `json:"expires_at,omitempty"`
	FinishedAt     *time.Time        `json:"finished_at,omitempty"`
	Callback       *CallbackJSON     `json:"callback,omitempty"`
}

// BackoffJSON is a job's backoff policy in seconds.
type BackoffJSON struct {
	Base float64 `json:"base"`
	Max  float64 `json:"max"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func toJobJSON(j *queue.Job) JobJSON {
	var pl payloadJSON
	if j.State != queue.StateDone { // a done job keeps its result, not its payload
		pl = encodePayload(j.Payload, j.Attributes)
	}
	out := JobJSON{
		JobID: j.ID, Namespace: j.Namespace, Queue: j.Queue, State: string(j.State),
		Priority: j.Priority, Tries: j.Tries, RemainingTries: j.RemainingTries, Deliveries: j.Deliveries,
		Payload: pl.JSON, PayloadBase64: pl.Base64, Attributes: httpapi.PublicAttributes(j.Attributes),
		UniqueKey: j.UniqueKey, TTL: secondsOf(j.TTL), TTR: secondsOf(j.TTR), LastError: j.LastError,
		PublishedAt: j.PublishedAt.UTC(), DueAt: timePtr(j.DueAt), LeaseUntil: timePtr(j.LeaseUntil),
		ExpiresAt: timePtr(j.ExpiresAt), FinishedAt: timePtr(j.FinishedAt),
	}
	if c := j.Callback; c != nil {
		timeout := secondsOf(c.Timeout)
		out.Callback = &CallbackJSON{URL: c.URL, Method: c.Method, Headers: c.Header, Timeout: &timeout}
	}
	if j.State == queue.StateReady {
		pos := j.Position
		out.Position = &pos
	}
	if j.Backoff != (queue.Backoff{}) {
		out.Backoff = &BackoffJSON{Base: secondsOf(j.Backoff.Base), Max: secondsOf(j.Backoff.Max)}
	}
	if j.Result != nil {
		if isJSONText(j.Result) {
			out.Result = j.Result
		} else {
			b := base64.StdEncoding.EncodeToString(j.Result)
			out.ResultBase64 = &b
		}
	}
	return out
}

// getJob is GET /v1/ns/{ns}/queues/{q}/jobs/{id}.
func (a *API) getJob(w http.ResponseWriter, r *http.Request) error {
	j, err := a.queue.Get(r.Context(), r.PathValue("ns"), r.PathValue("q"), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toJobJSON(j))
	return nil
}

// deleteJob is DELETE /v1/ns/{ns}/queues/{q}/jobs/{id}: cancel a job in any state.
func (a *API) deleteJob(w http.ResponseWriter, r *http.Request) error {
	n, err := a.queue.Delete(r.Context(), r.PathValue("ns"), r.PathValue("q"), r.PathValue("id"))
	if err != nil {
		return err
	}
	if n == 0 {
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "no job " + r.PathValue("id") + " in this queue"}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type ackRequest struct {
	Delivery     *int            `json:"delivery"`
	Result       json.RawMessage `json:"result"`
	ResultBase64 *string         `json:"result_base64"`
}

// atLeastMilli reads an optional number of seconds (httpapi.Seconds) that, when given, must be at
// least a millisecond; omitted, for the error, says what leaving it out means ("" says nothing).
func atLeastMilli(field string, v *float64, omitted string) (time.Duration, error) {
	d, err := httpapi.Seconds(field, v)
	if err != nil {
		return 0, err
	}
	if v != nil && d < time.Millisecond {
		if omitted == "" {
			return 0, httpapi.InvalidArg(field, "must be at least 0.001 seconds")
		}
		return 0, httpapi.InvalidArg(field, "must be at least 0.001 seconds (leave it out for %s)", omitted)
	}
	return d, nil
}

func deliveryOf(d *int) (int, error) {
	if d == nil || *d < 1 {
		return 0, httpapi.InvalidArg("delivery", "give the delivery number the consume returned (1 or more)")
	}
	return *d, nil
}

// ack is POST /v1/ns/{ns}/queues/{q}/jobs/{id}/ack.
func (a *API) ack(w http.ResponseWriter, r *http.Request) error {
	var req ackRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	d, err := deliveryOf(req.Delivery)
	if err != nil {
		return err
	}
	p := queue.AckParams{Namespace: r.PathValue("ns"), Queue: r.PathValue("q"), ID: r.PathValue("id"), Delivery: d}
	switch {
	case req.Result != nil && req.ResultBase64 != nil:
		return httpapi.InvalidArg("result", "give result or result_base64, not both")
	case req.Result != nil:
		p.Result = []byte(req.Result)
	case req.ResultBase64 != nil:
		if p.Result, err = base64.StdEncoding.DecodeString(*req.ResultBase64); err != nil {
			return httpapi.InvalidArg("result_base64", "not standard base64: %v", err)
		}
		if p.Result == nil {
			p.Result = []byte{}
		}
	}
	if err := a.queue.Ack(r.Context(), p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type nackRequest struct {
	Delivery   *int     `json:"delivery"`
	Error      string   `json:"error"`
	RetryAfter *float64 `json:"retry_after"`
	NoRetry    bool     `json:"no_retry"`
}

// nack is POST /v1/ns/{ns}/queues/{q}/jobs/{id}/nack.
func (a *API) nack(w http.ResponseWriter, r *http.Request) error {
	var req nackRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	d, err := deliveryOf(req.Delivery)
	if err != nil {
		return err
	}
	if len(req.Error) > 4096 {
		return httpapi.InvalidArg("error", "longer than 4096 bytes")
	}
	p := queue.NackParams{Namespace: r.PathValue("ns"), Queue: r.PathValue("q"), ID: r.PathValue("id"),
		Delivery: d, Error: req.Error, NoRetry: req.NoRetry}
	if req.RetryAfter != nil {
		ra, err := httpapi.Seconds("retry_after", req.RetryAfter)
		if err != nil {
			return err
		}
		p.RetryAfter = &ra
	}
	out, err := a.queue.Nack(r.Context(), p)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"outcome": string(out)})
	return nil
}

type touchRequest struct {
	Delivery *int     `json:"delivery"`
	TTR      *float64 `json:"ttr"`
}

// touch is POST /v1/ns/{ns}/queues/{q}/jobs/{id}/touch.
func (a *API) touch(w http.ResponseWriter, r *http.Request) error {
	var req touchRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	d, err := deliveryOf(req.Delivery)
	if err != nil {
		return err
	}
	ttr, err := atLeastMilli("ttr", req.TTR, "the job's own ttr")
	if err != nil {
		return err
	}
	until, err := a.queue.Touch(r.Context(), queue.TouchParams{Namespace: r.PathValue("ns"), Queue: r.PathValue("q"),
		ID: r.PathValue("id"), Delivery: d, TTR: ttr})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]time.Time{"lease_until": until.UTC()})
	return nil
}

// secondsOf renders a duration as seconds for responses.
func secondsOf(d time.Duration) float64 { return d.Seconds() }

// prefixed puts a batch prefix before a field name ("jobs[2]" + "priority").
func prefixed(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return fmt.Sprintf("%s.%s", prefix, field)
}
