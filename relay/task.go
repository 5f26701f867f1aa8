package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/tracing"
)

// TaskType says who calls the endpoint.
type TaskType string

const (
	// Offline: a Dispatcher makes the call and stores the result.
	Offline TaskType = "offline"
	// Online: when its turn comes the task is permitted and carries a permit; the caller makes
	// the call with it, then reports Done.
	Online TaskType = "online"
)

// Status is where a task is in its life.
type Status string

// Task statuses. pending → processing (offline) or permitted (online) → completed | failed;
// pending → cancelled | timeout; processing or permitted → cancelled.
const (
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusPermitted  Status = "permitted"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
	StatusCancelled  Status = "cancelled"
	StatusTimeout    Status = "timeout"
)

// Final reports whether the status is an end: completed, failed, cancelled or timeout.
func (s Status) Final() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled || s == StatusTimeout
}

// MaxPriority is the highest task priority; 0 is the lowest and the default.
const MaxPriority = 255

// MaxSubject bounds the length of SubmitParams.Subject, in bytes.
const MaxSubject = 256

// SubmitParams describe a task.
type SubmitParams struct {
	// Endpoint names the endpoint to call. Either it or TargetURL is required.
	Endpoint string
	// TargetURL is the URL to call. Without Endpoint, the task goes to the endpoint whose target
	// URL it is under (the longest such); with Endpoint it must be under that endpoint's target
	// URL. Default: the endpoint's target URL.
	TargetURL string
	// Method is the HTTP method. Default POST.
	Method string
	// Header is sent with the call (hop-by-hop headers and Host are refused).
	Header http.Header
	// Query is added to the URL's query.
	Query url.Values
	// Body is the request body, at most Config.MaxBodyBytes.
	Body []byte
	// Priority is the priority asked for, 0 (default) to MaxPriority: higher runs first. It is
	// lowered to what PriorityCap or a valid Grant allows.
	Priority int
	// PriorityCap is the highest priority the submitter may ask for by itself: the caller sets
	// it from the submitter's credentials (a token's limit), never from the request. Default 0.
	PriorityCap int
	// Grant is an optional priority grant (SignGrant) for GrantSubject, allowing up to its
	// priority.
	Grant string
	// Subject names who the task is for (a user id): the per-subject cap
	// (Endpoint.MaxQueuedPerSubject) and fair sharing (Endpoint.FairShare) apply to it. The caller
	// sets it from the submitter's credentials, never from the request alone: a client that picks
	// its own subject can pick a new one for every task. At most 256 bytes. Optional: tasks
	// without one share the subject "".
	Subject string
	// GrantSubject is the subject Grant must be signed for. Default: Subject. A caller that
	// scopes subjects under the submitter's identity (the server's "<token id>/<subject>") names
	// here the subject as the application knows it.
	GrantSubject string
	// Type is Offline (default) or Online.
	Type TaskType
	// Namespace is the submitter's namespace (set by the caller from its credentials), kept
	// with the task so that reads can be limited to it. Optional.
	Namespace string
	// Submitter names who submits within Namespace (the caller sets it from the submitter's
	// credentials, such as a token's id, never from the request): idempotency keys are scoped
	// to Namespace and Submitter. Optional.
	Submitter string
	// IdempotencyKey makes a resend safe: while Config.IdempotencyRetention runs, a Submit of the
	// endpoint with the same key (from the same Namespace and Submitter) and the same request
	// answers with the task the key first created (SubmitResult.Duplicate) and creates nothing;
	// the same key with a different request is ErrIdempotencyConflict. At most
	// MaxIdempotencyKey bytes of visible ASCII. Optional.
	IdempotencyKey string
	// Callback, when set, is called with the task's final state when it ends (completion
	// callback). It needs Namespace (whose callback settings allow and sign it) and
	// Config.Completions, which checks its URL against the namespace's allowed destinations.
	// Optional.
	Callback *Callback
}

// SubmitResult is what Submit returns.
type SubmitResult struct {
	ID        string
	Endpoint  string
	Status    Status
	Priority  int // the effective priority
	CreatedAt time.Time
	// WaitNum is the number of tasks ahead of this one, of every priority, when it was queued
	// (-1 for a Duplicate that is no longer pending). Tasks submitted later may still go ahead of
	// it: a higher priority, or, on a FairShare endpoint, another subject's task of an earlier
	// round.
	WaitNum int64
	// Duplicate says the IdempotencyKey had already created this task, and nothing was created
	// now. Status is then the task's status now ("" when the task has left Redis).
	Duplicate bool
}

// Task is a task as Get and Wait return it.
type Task struct {
	ID        string
	Endpoint  string
	Namespace string
	Status    Status
	Type      TaskType
	Priority  int
	Subject   string
	Method    string
	URL       string

	// HTTPStatus is the status of the last call (0 before any).
	HTTPStatus int
	// Result is the body of the last response (capped; ResultTruncated says it was cut), and
	// ResultHeader the response headers the dispatcher keeps.
	Result          []byte
	ResultHeader    http.Header
	ResultTruncated bool
	// Error says why the last attempt failed, or why the task ended without a result.
	Error string

	// WaitNum is the number of tasks ahead while pending, else -1: exact when read, but tasks
	// submitted later may go ahead (a higher priority; on a FairShare endpoint, one task per
	// other subject per round), so it can grow.
	WaitNum int64
	// WaitTime is the estimated time until the task starts, when WaitKnown (pending tasks only),
	// from WaitNum: it grows when tasks submitted later go ahead (see WaitNum).
	WaitTime  time.Duration
	WaitKnown bool

	CreatedAt time.Time
	StartedAt time.Time // last start; zero before
	EndedAt   time.Time // zero before the end
	// Tries is the number of attempts started; MaxTries the most it gets.
	Tries    int
	MaxTries int
	// Duration is how long the last call took (offline), or from permit to Done (online).
	Duration time.Duration

	// Permit is the signed permit of a permitted online task, valid until PermitExpires.
	Permit        string
	PermitExpires time.Time

	// Archived says the task was read from the archive (it left Redis).
	Archived bool

	// Callback is the task's completion callback (nil: none; not kept by the archive).
	Callback *Callback
}

// Submit queues a task and returns its id and place. ErrNotFound: no such endpoint (or none
// covers TargetURL); ErrQueueFull: the endpoint's or the subject's queue is full;
// ErrIdempotencyConflict: the IdempotencyKey was used for another request; a *sluice.FieldError
// names a bad field.
func (c *Client) Submit(ctx context.Context, p SubmitParams) (result SubmitResult, err error) {
	ctx, span := c.startSubmit(ctx, cmp.Or(p.Endpoint, "target"))
	if span != nil {
		defer func() { tracing.End(span, err, tracing.MessageID.String(result.ID)) }()
	}
	e, target, err := c.resolve(ctx, p.Endpoint, p.TargetURL)
	if err != nil {
		return SubmitResult{}, err
	}
	req, err := c.checkSubmit(&p, target)
	if err != nil {
		return SubmitResult{}, err
	}
	if p.Callback != nil {
		if err := c.cfg.Completions.CheckCallback(ctx, p.Namespace, *p.Callback); err != nil {
			return SubmitResult{}, err
		}
	}
	pri := c.effectivePriority(p)
	sr := submitReq{e: e, id: c.ids.next(e.Name), pri: pri, p: &p, req: req}
	if p.IdempotencyKey != "" {
		sr.idem = c.keys.get(e.Name).idempotency(idempotencyScope(p.Namespace, p.Submitter, p.IdempotencyKey))
		sr.hash = requestHash(e.Name, &p, req)
	}
	if span != nil { // after the idempotency hash: a retried submit carries another trace
		if sr.req.header, err = tracedHeader(ctx, p.Header); err != nil {
			return SubmitResult{}, fieldErr("headers", "cannot be encoded: %v", err)
		}
	}
	res, err := c.submits.Do(ctx, e.Name, sr)
	if err != nil {
		return SubmitResult{}, fmt.Errorf("relay: submit to %s: %w", e.Name, err)
	}
	switch res.code {
	case 0:
		return SubmitResult{
			ID: sr.id, Endpoint: e.Name, Status: StatusPending, Priority: pri,
			CreatedAt: time.UnixMilli(res.createdAt).UTC(), WaitNum: res.waitNum,
		}, nil
	case 1:
		return SubmitResult{}, fmt.Errorf("%w: endpoint %s holds %d waiting tasks", ErrQueueFull, e.Name, e.MaxQueued)
	case 2:
		return SubmitResult{}, fmt.Errorf("%w: subject holds %d waiting tasks at endpoint %s", ErrQueueFull, e.MaxQueuedPerSubject, e.Name)
	case 3:
		return SubmitResult{}, fmt.Errorf("%w: endpoint %s", ErrIdempotencyConflict, e.Name)
	case 4:
		dup := SubmitResult{
			ID: res.id, Endpoint: e.Name, Status: Status(res.status), Priority: int(res.priority),
			CreatedAt: time.UnixMilli(res.createdAt).UTC(), WaitNum: res.waitNum, Duplicate: true,
		}
		if dup.Status == "" { // the task left Redis: the archive may know how it ended
			if t, err := c.getArchived(ctx, dup.ID); err == nil {
				dup.Status = t.Status
			}
		}
		return dup, nil
	}
	return SubmitResult{}, fmt.Errorf("relay: submit: unexpected reply %+v", res)
}

// submitReq is one task for submit.lua.
type submitReq struct {
	e   Endpoint
	id  string
	pri int
	p   *SubmitParams
	req preparedRequest
	// idem is the key of the idempotency record and hash the request's hash (requestHash);
	// both "" without an IdempotencyKey.
	idem, hash string
}

// submitReply is submit.lua's answer for one task.
type submitReply struct {
	code, createdAt, waitNum int64
	// id, status and priority of the task an idempotency key had created (code 4).
	id, status string
	priority   int64
}

// runSubmits queues a batch of tasks of one endpoint in one script call; the endpoint settings
// are the first task's (they differ only across a settings change, which applies within the
// refresh interval anyway).
func (c *Client) runSubmits(ctx context.Context, endpoint string, reqs []submitReq) ([]submitReply, error) {
	e := reqs[0].e
	queueTimeout := min(e.QueueTimeout, c.cfg.PendingRetention)
	args := make([]any, 0, 7+12*len(reqs))
	fair := 0
	if e.FairShare {
		fair = 1
	}
	args = append(args, e.Tries, e.MaxQueued, e.MaxQueuedPerSubject, ms(queueTimeout), fair, ms(c.cfg.IdempotencyRetention), len(reqs))
	fixed := len(c.keys.get(endpoint).all)
	var records []string // KEYS after the endpoint's: the tasks' idempotency records, by index
	for _, r := range reqs {
		idx := 0
		if r.idem != "" {
			records = append(records, r.idem)
			idx = fixed + len(records)
		}
		args = append(args, r.id, r.pri, r.p.Subject, string(r.p.Type), r.req.method, r.req.url, r.req.header, r.p.Body,
			r.p.Namespace, idx, r.hash, r.req.callback)
	}
	raw, err := c.runWithKeys(ctx, scriptSubmit, endpoint, records, args...).Slice()
	if err != nil {
		return nil, err
	}
	out := make([]submitReply, len(raw))
	for i, r := range raw {
		vals, _ := r.([]any)
		num := func(j int) int64 {
			if j < len(vals) {
				n, _ := vals[j].(int64)
				return n
			}
			return 0
		}
		str := func(j int) string {
			if j < len(vals) {
				s, _ := vals[j].(string)
				return s
			}
			return ""
		}
		out[i] = submitReply{code: num(0), createdAt: num(1), waitNum: num(2), id: str(3), status: str(4), priority: num(5)}
	}
	return out, nil
}

type preparedRequest struct {
	method, url, header string
	callback            string // the completion callback's record; "" for none
}

// hopHeaders may not be set by a task: they belong to the connection, not the request.
var hopHeaders = map[string]bool{
	"Host": true, "Connection": true, "Content-Length": true, "Transfer-Encoding": true, "Te": true,
	"Upgrade": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authorization": true, "Trailer": true,
}

var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// checkSubmit validates p (filling defaults) and returns the request to store.
func (c *Client) checkSubmit(p *SubmitParams, target string) (preparedRequest, error) {
	var r preparedRequest
	if p.Method == "" {
		p.Method = http.MethodPost
	}
	if !methods[p.Method] {
		return r, fieldErr("http_method", "must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
	}
	if p.Type == "" {
		p.Type = Offline
	}
	if p.Type != Offline && p.Type != Online {
		return r, fieldErr("task_type", "must be offline or online")
	}
	if p.Type == Online && len(c.cfg.PermitKeys) == 0 {
		return r, fieldErr("task_type", "online tasks need permit keys in the relay configuration")
	}
	if p.Priority < 0 || p.Priority > MaxPriority {
		return r, fieldErr("priority", "must be between 0 and %d", MaxPriority)
	}
	if len(p.Namespace) > 191 {
		return r, fieldErr("namespace", "must be at most 191 bytes")
	}
	if len(p.Subject) > MaxSubject || len(p.GrantSubject) > MaxSubject {
		return r, fieldErr("subject", "must be at most %d bytes", MaxSubject)
	}
	if len(p.Body) > c.cfg.MaxBodyBytes {
		return r, fieldErr("body", "must be at most %d bytes", c.cfg.MaxBodyBytes)
	}
	if err := checkIdempotencyKey(p.IdempotencyKey); err != nil {
		return r, err
	}
	if p.Callback != nil {
		cb, err := c.checkCallback(p.Namespace, p.Callback)
		if err != nil {
			return r, err
		}
		p.Callback = cb
		r.callback = cb.encode()
	}
	for name, vals := range p.Header {
		if !validHeaderName(name) {
			return r, fieldErr("headers", "%q is not a valid header name", name)
		}
		if hopHeaders[http.CanonicalHeaderKey(name)] {
			return r, fieldErr("headers", "%s may not be set by a task", http.CanonicalHeaderKey(name))
		}
		for _, v := range vals {
			if strings.ContainsAny(v, "\r\n\x00") {
				return r, fieldErr("headers", "the value of %s holds a line break or NUL", name)
			}
		}
	}
	u, err := url.Parse(target)
	if err != nil {
		return r, fieldErr("target_url", "is not a URL: %v", err)
	}
	if len(p.Query) > 0 {
		q := u.Query()
		for k, vs := range p.Query {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		u.RawQuery = q.Encode()
	}
	h := []byte("{}")
	if len(p.Header) > 0 {
		if h, err = json.Marshal(p.Header); err != nil {
			return r, fieldErr("headers", "cannot be encoded: %v", err)
		}
	}
	r.method, r.url, r.header = p.Method, u.String(), string(h)
	return r, nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch <= ' ' || ch >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, ch) >= 0 {
			return false
		}
	}
	return true
}

// Get returns a task: from Redis while it is there, then from the archive when one is
// configured, else ErrNotFound. The first read of a final status shortens the task's stay in
// Redis to Config.ReadRetention.
func (c *Client) Get(ctx context.Context, id string) (Task, error) {
	return c.get(ctx, id, true)
}

func (c *Client) get(ctx context.Context, id string, markRead bool) (Task, error) {
	endpoint, ok := splitID(id)
	if !ok {
		return Task{}, fmt.Errorf("%w: task %q", ErrNotFound, id)
	}
	read := 0
	if markRead {
		read = 1
	}
	raw, err := c.run(ctx, scriptGet, endpoint, id, read).Slice()
	if err != nil {
		return Task{}, fmt.Errorf("relay: get task %s: %w", id, err)
	}
	if len(raw) == 0 {
		return c.getArchived(ctx, id)
	}
	t := parseTask(raw[0].([]any))
	t.WaitNum = raw[1].(int64)
	if t.Status == StatusPermitted {
		t.Permit = c.signPermit(t.ID, t.PermitExpires.UnixMilli())
	} else {
		t.PermitExpires = time.Time{}
	}
	if t.WaitNum >= 0 {
		c.estimateWait(ctx, &t, raw[2].(int64), raw[3].(int64), raw[4].(int64), parseRing(raw[5].([]any)), raw[6])
	}
	return t, nil
}

// parseTask reads the fields of lib.lua's task_fields.
func parseTask(f []any) Task {
	s := func(i int) string {
		if v, ok := f[i].(string); ok {
			return v
		}
		return ""
	}
	n := func(i int) int64 {
		v, _ := strconv.ParseInt(s(i), 10, 64)
		return v
	}
	at := func(i int) time.Time {
		if v := n(i); v > 0 {
			return time.UnixMilli(v).UTC()
		}
		return time.Time{}
	}
	t := Task{
		ID: s(0), Endpoint: s(1), Status: Status(s(2)), Priority: int(n(3)), Subject: s(4),
		Type: TaskType(s(5)), CreatedAt: at(6), StartedAt: at(7), EndedAt: at(8),
		Tries: int(n(9)), MaxTries: int(n(10)), HTTPStatus: int(n(11)), ResultTruncated: s(14) == "1",
		Error: s(15), PermitExpires: at(16), Duration: time.Duration(n(18)) * time.Millisecond,
		Method: s(19), URL: s(20), Namespace: s(21), Callback: decodeCallback(s(22)), WaitNum: -1,
	}
	if res := s(13); res != "" {
		t.Result = []byte(res)
	}
	if rh := s(12); rh != "" && rh != "{}" {
		_ = json.Unmarshal([]byte(rh), &t.ResultHeader)
	}
	return t
}

// CancelResult is the status of a task after Cancel.
type CancelResult struct {
	ID     string
	Status Status
	// Cancelled says this call cancelled the task; false when it had ended already (Status
	// says how).
	Cancelled bool
}

// Cancel cancels a task: a pending one at once; a running offline call is marked cancelled and
// its result discarded when it arrives; a permitted online task's permit stops working and its
// slot is freed. A task that has ended keeps its status (Cancelled false). ErrNotFound when
// there is no such task.
func (c *Client) Cancel(ctx context.Context, id string) (CancelResult, error) {
	endpoint, ok := splitID(id)
	if !ok {
		return CancelResult{}, fmt.Errorf("%w: task %q", ErrNotFound, id)
	}
	raw, err := c.run(ctx, scriptCancel, endpoint, id).Slice()
	if err != nil {
		return CancelResult{}, fmt.Errorf("relay: cancel task %s: %w", id, err)
	}
	if len(raw) == 0 {
		if t, err := c.getArchived(ctx, id); err == nil {
			return CancelResult{ID: id, Status: t.Status}, nil
		}
		return CancelResult{}, fmt.Errorf("%w: task %q", ErrNotFound, id)
	}
	st, _ := raw[0].(string)
	return CancelResult{ID: id, Status: Status(st), Cancelled: raw[1].(int64) == 1}, nil
}

// waitRecheck is the longest Wait goes without reading the task (it is woken by notifications).
const waitRecheck = 5 * time.Second

// Wait returns the task once it is permitted (online) or has ended, or when max passed (with
// the task as it is then), whichever comes first. It is woken by a notification from the script
// that changed the task, not by polling. ctx ending returns ctx.Err().
func (c *Client) Wait(ctx context.Context, id string, maxWait time.Duration) (Task, error) {
	if _, ok := splitID(id); !ok {
		return Task{}, fmt.Errorf("%w: task %q", ErrNotFound, id)
	}
	w, err := c.watch(ctx, nil, c.ch.task+id)
	if err != nil {
		return Task{}, err
	}
	defer w.Stop()
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	// A notification lost while the subscription reconnects costs at most waitRecheck.
	recheck := time.NewTicker(waitRecheck)
	defer recheck.Stop()
	for {
		t, err := c.get(ctx, id, false)
		if err != nil {
			return Task{}, err
		}
		if t.Status.Final() || t.Status == StatusPermitted {
			if t.Status.Final() && !t.Archived {
				return c.get(ctx, id, true) // the caller read the final status
			}
			return t, nil
		}
		select {
		case <-w.C:
			if w.Closed() {
				return Task{}, ErrClosed
			}
		case <-recheck.C:
		case <-timer.C:
			return c.get(ctx, id, false)
		case <-ctx.Done():
			return Task{}, ctx.Err()
		}
	}
}
