package tasks

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// GrantHeader carries a priority grant (relay.SignGrant) when the body has no priority_grant.
const GrantHeader = "Sluice-Priority-Grant"

// IdempotencyKeyHeader makes a submit safe to resend (relay.SubmitParams.IdempotencyKey): the
// same key from the same token answers 200 with the task it first created.
const IdempotencyKeyHeader = "Idempotency-Key"

// submitRequest is the body of POST /v1/tasks, with the field names users of the design know.
type submitRequest struct {
	Endpoint    string            `json:"endpoint"`
	TargetURL   string            `json:"target_url"`
	HTTPMethod  string            `json:"http_method"`
	Headers     map[string]string `json:"headers"`
	QueryParams map[string]string `json:"query_params"`
	// Body is the request body: a JSON string is sent as its text, any other JSON value as its
	// JSON encoding, with Content-Type: application/json unless Headers set one.
	Body          json.RawMessage `json:"body"`
	BodyBase64    *string         `json:"body_base64"`
	Priority      *int            `json:"priority"`
	TaskType      string          `json:"task_type"`
	Subject       string          `json:"subject"`
	PriorityGrant string          `json:"priority_grant"`
	// Callback is called with the task's final state when it ends (docs/relay.md).
	Callback *callbackBody `json:"callback"`
}

// callbackBody is a task's completion callback: the shape of a job's callback (timeout in
// seconds), less the method: a completion callback is always a POST.
type callbackBody struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Timeout *float64          `json:"timeout"`
}

// SubmitResponse is the answer to POST /v1/tasks (201).
type SubmitResponse struct {
	TaskID     string    `json:"task_id"`
	TaskStatus string    `json:"task_status"`
	Endpoint   string    `json:"endpoint"`
	Priority   int       `json:"priority"`
	CreatedAt  time.Time `json:"created_at"`
	WaitNum    int64     `json:"wait_num"`
}

// TaskResponse is a task as GET /v1/tasks/{id} shows it (relay.TaskJSON, also the body of a
// task's completion callback).
type TaskResponse = relay.TaskJSON

// CancelResponse is the answer to DELETE /v1/tasks/{id} and POST /v1/tasks/{id}/cancel.
type CancelResponse struct {
	TaskID     string `json:"task_id"`
	TaskStatus string `json:"task_status"`
	// Cancelled says this request cancelled the task; false when it had ended already.
	Cancelled bool `json:"cancelled"`
}

// maxSubmitBatch bounds the tasks of one batch submit.
const maxSubmitBatch = 1000

// submitBatch is a batch submit: {"tasks": [task, ...]}.
type submitBatch struct {
	submitRequest
	Tasks []submitRequest `json:"tasks"`
}

// BatchItem is one task's outcome in a batch submit: the task, or the error that refused it.
type BatchItem struct {
	*SubmitResponse
	Error *httpapi.ErrorDetail `json:"error,omitempty"`
}

// submit is POST /v1/tasks: one task, or a batch under "tasks".
func (a *API) submit(w http.ResponseWriter, r *http.Request) error {
	tok, _ := tenant.FromContext(r.Context())
	var req submitBatch
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	who := a.submitter(tok)
	grant := r.Header.Get(GrantHeader)
	keys := r.Header.Values(IdempotencyKeyHeader)
	if len(keys) > 1 || (len(keys) == 1 && keys[0] == "") {
		return httpapi.InvalidArg("idempotency_key", "send one %s header of 1 to %d visible ASCII characters", IdempotencyKeyHeader, relay.MaxIdempotencyKey)
	}
	if req.Tasks == nil {
		p, err := req.params(who, "")
		if err != nil {
			return err
		}
		p.Grant = cmp.Or(p.Grant, grant)
		if len(keys) == 1 {
			p.IdempotencyKey = keys[0]
		}
		res, err := a.relay.Submit(r.Context(), p)
		if err != nil {
			return err
		}
		status := http.StatusCreated
		if res.Duplicate {
			status = http.StatusOK
		}
		httpapi.WriteJSON(w, status, submitted(res))
		return nil
	}
	if !reflect.ValueOf(req.submitRequest).IsZero() {
		return httpapi.InvalidArg("tasks", "give either one task or a tasks array, not both")
	}
	if len(keys) > 0 {
		return httpapi.InvalidArg("idempotency_key", "the %s header is for one task; send the tasks of a batch one by one to make each safe to resend", IdempotencyKeyHeader)
	}
	if len(req.Tasks) == 0 || len(req.Tasks) > maxSubmitBatch {
		return httpapi.InvalidArg("tasks", "%d tasks; a batch has 1..%d", len(req.Tasks), maxSubmitBatch)
	}
	ps := make([]relay.SubmitParams, len(req.Tasks))
	for i := range req.Tasks {
		p, err := req.Tasks[i].params(who, fmt.Sprintf("tasks[%d].", i))
		if err != nil {
			return err
		}
		p.Grant = cmp.Or(p.Grant, grant)
		ps[i] = p
	}
	// A callback the namespace may not call refuses the whole batch before any task is queued.
	for i, p := range ps {
		if p.Callback == nil {
			continue
		}
		if err := a.relay.CheckCallback(r.Context(), p.Namespace, *p.Callback); err != nil {
			var fe *sluice.FieldError
			if errors.As(err, &fe) {
				return httpapi.InvalidArg(fmt.Sprintf("tasks[%d].%s", i, fe.Field), "%s", fe.Reason)
			}
			return err
		}
	}
	// Concurrent submits to one endpoint share script calls (the relay combines them), so a
	// batch costs Redis about one round trip per endpoint. Tasks are accepted or refused one by
	// one (a full queue refuses the rest); the order of ids within a priority follows the
	// batch only loosely.
	out := make([]BatchItem, len(ps))
	errs := make([]error, len(ps))
	ctx := r.Context()
	var wg sync.WaitGroup
	for i := range ps {
		wg.Go(func() { out[i], errs[i] = a.submitOne(ctx, ps[i]) })
	}
	wg.Wait()
	// The server's fault (internal, unavailable) is logged and counted once per request, as a
	// request's error would be.
	if st := httpapi.StateOf(ctx); st != nil {
		for _, err := range errs {
			if err == nil {
				continue
			}
			if e := httpapi.ErrorOf(ctx, err); e.Code == httpapi.CodeInternal || e.Code == httpapi.CodeUnavailable {
				st.NoteError(ctx, e, err)
				break
			}
		}
	}
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"tasks": out})
	return nil
}

// submitOne submits one task of a batch; a failure becomes the item's error.
func (a *API) submitOne(ctx context.Context, p relay.SubmitParams) (BatchItem, error) {
	res, err := a.relay.Submit(ctx, p)
	if err != nil {
		e := httpapi.ErrorOf(ctx, err)
		return BatchItem{Error: &httpapi.ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field}}, err
	}
	sr := submitted(res)
	return BatchItem{SubmitResponse: &sr}, nil
}

func submitted(res relay.SubmitResult) SubmitResponse {
	return SubmitResponse{
		TaskID: res.ID, TaskStatus: string(res.Status), Endpoint: res.Endpoint, Priority: res.Priority,
		CreatedAt: res.CreatedAt, WaitNum: max(res.WaitNum, 0),
	}
}

// submitter is what the token of a submit decides for its tasks: their namespace, fairness
// subject and priority cap, never the body.
type submitter struct {
	tok tenant.Token
	// maxPriority is the token's max_priority, else the server's default cap.
	maxPriority int
	// delegate: the token may name who a task is for (tasks:delegate).
	delegate bool
}

func (a *API) submitter(tok tenant.Token) submitter {
	s := submitter{tok: tok, maxPriority: a.cfg.DefaultMaxPriority, delegate: tok.Allows(tenant.PermTasksDelegate)}
	if tok.MaxPriority >= 0 {
		s.maxPriority = tok.MaxPriority
	}
	return s
}

// MaxSubject bounds the subject of a submitted task, in bytes (the fairness subject it makes,
// "<token id>/<subject>", stays within relay.MaxSubject).
const MaxSubject = 200

// subject is the fairness subject of a task whose body names subject (maybe ""): the token (its
// id, never its secret), or for a token with tasks:delegate the named subject scoped under the
// token, so that two tokens' "alice" are two subjects and a delegate token cannot name another
// token's subject. A token without tasks:delegate may still name a subject: it is the one a
// priority grant must be signed for, and changes nothing else.
func (s submitter) subject(subject string) string {
	if s.delegate && subject != "" {
		return s.tok.ID + "/" + subject
	}
	return s.tok.ID
}

// checkSubject refuses a subject that is too long or holds control characters.
func checkSubject(subject string) error {
	if len(subject) > MaxSubject {
		return httpapi.InvalidArg("subject", "%d bytes; at most %d", len(subject), MaxSubject)
	}
	if strings.IndexFunc(subject, unicode.IsControl) >= 0 {
		return httpapi.InvalidArg("subject", "holds a control character")
	}
	return nil
}

// params turns the body into relay.SubmitParams for the submitter's namespace. The subject and
// the priority cap come from the token, never from the body alone.
func (req *submitRequest) params(who submitter, prefix string) (relay.SubmitParams, error) {
	p, err := req.paramsOf(who)
	var fe *httpapi.Error
	if prefix != "" && errors.As(err, &fe) && fe.Field != "" {
		fe.Field = prefix + fe.Field
	}
	return p, err
}

func (req *submitRequest) paramsOf(who submitter) (relay.SubmitParams, error) {
	p := relay.SubmitParams{
		Endpoint: req.Endpoint, TargetURL: req.TargetURL, Method: req.HTTPMethod,
		Subject: who.subject(req.Subject), GrantSubject: req.Subject, Grant: req.PriorityGrant,
		Namespace: who.tok.Namespace, Submitter: who.tok.ID, PriorityCap: who.maxPriority,
	}
	if err := checkSubject(req.Subject); err != nil {
		return p, err
	}
	if req.Endpoint == "" && req.TargetURL == "" {
		return p, httpapi.InvalidArg("endpoint", "name an endpoint, or give a target_url under one")
	}
	if req.Priority != nil {
		if *req.Priority < 0 || *req.Priority > relay.MaxPriority {
			return p, httpapi.InvalidArg("priority", "%d is outside 0..%d", *req.Priority, relay.MaxPriority)
		}
		p.Priority = *req.Priority
	}
	switch req.TaskType {
	case "", string(relay.Offline):
		p.Type = relay.Offline
	case string(relay.Online):
		p.Type = relay.Online
	default:
		return p, httpapi.InvalidArg("task_type", "want offline or online, got %q", req.TaskType)
	}
	if len(req.Headers) > 0 {
		p.Header = make(http.Header, len(req.Headers))
		for k, v := range req.Headers {
			p.Header.Set(k, v)
		}
	}
	if len(req.QueryParams) > 0 {
		p.Query = make(url.Values, len(req.QueryParams))
		for k, v := range req.QueryParams {
			p.Query.Set(k, v)
		}
	}
	switch {
	case req.BodyBase64 != nil && len(req.Body) > 0:
		return p, httpapi.InvalidArg("body_base64", "give body or body_base64, not both")
	case req.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*req.BodyBase64)
		if err != nil {
			return p, httpapi.InvalidArg("body_base64", "not standard base64: %v", err)
		}
		p.Body = b
	case len(req.Body) > 0 && string(req.Body) != "null":
		if req.Body[0] == '"' {
			var s string
			if err := json.Unmarshal(req.Body, &s); err != nil {
				return p, httpapi.InvalidArg("body", "not a JSON string: %v", err)
			}
			p.Body = []byte(s)
		} else {
			p.Body = append([]byte(nil), req.Body...)
			if p.Header.Get("Content-Type") == "" {
				// It is sent as JSON, so it says so, unless the task's headers say otherwise.
				if p.Header == nil {
					p.Header = make(http.Header, 1)
				}
				p.Header.Set("Content-Type", "application/json")
			}
		}
	}
	if c := req.Callback; c != nil {
		timeout, err := httpapi.Seconds("callback.timeout", c.Timeout)
		if err != nil {
			return p, err
		}
		if c.Timeout != nil && timeout < time.Millisecond {
			return p, httpapi.InvalidArg("callback.timeout", "must be at least 0.001 seconds (leave it out for the default of 30)")
		}
		p.Callback = &relay.Callback{URL: c.URL, Header: c.Headers, Timeout: timeout}
	}
	return p, nil
}

// get is GET /v1/tasks/{id}, with ?wait=<duration> to long-poll until the task is permitted or
// has ended.
func (a *API) get(w http.ResponseWriter, r *http.Request) error {
	tok, _ := tenant.FromContext(r.Context())
	id := r.PathValue("id")
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return httpapi.InvalidArg("wait", "%v", err)
		}
		wait = min(d, a.cfg.MaxWait)
	}
	// Peek first: a token of another namespace must not learn of the task, nor shorten its
	// stay by reading its final status.
	t, err := a.owned(r, tok, id)
	if err != nil {
		return err
	}
	switch {
	case wait > 0 && !t.Status.Final() && t.Status != relay.StatusPermitted:
		ctx, cancel := httpapi.WithDrain(r.Context(), a.cfg.Drain)
		defer cancel()
		t, err = a.relay.Wait(ctx, id, wait)
		if err != nil && r.Context().Err() == nil && a.cfg.Drain.Err() != nil {
			// The server is draining: answer with the task as it is.
			t, err = a.relay.Peek(r.Context(), id)
		}
		if err != nil {
			return err
		}
	case t.Status.Final() && !t.Archived:
		// The caller reads the final status: Get counts the read (the task leaves Redis soon).
		if t, err = a.relay.Get(r.Context(), id); err != nil {
			return err
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, t.JSON())
	return nil
}

// owned returns the task if it belongs to tok's namespace, else not_found.
func (a *API) owned(r *http.Request, tok tenant.Token, id string) (relay.Task, error) {
	t, err := a.relay.Peek(r.Context(), id)
	if err != nil {
		return t, err
	}
	if t.Namespace != tok.Namespace {
		return relay.Task{}, &httpapi.Error{Code: httpapi.CodeNotFound, Message: fmt.Sprintf("task %q not found", id)}
	}
	return t, nil
}

// parseWait takes a Go duration ("30s") or a number of seconds ("30").
func parseWait(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || f < 0 || f > httpapi.MaxSeconds {
			return 0, fmt.Errorf("%q is out of range", v)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (30s) or a number of seconds", v)
	}
	return d, nil
}

// cancel is DELETE /v1/tasks/{id} and POST /v1/tasks/{id}/cancel.
func (a *API) cancel(w http.ResponseWriter, r *http.Request) error {
	tok, _ := tenant.FromContext(r.Context())
	id := r.PathValue("id")
	if _, err := a.owned(r, tok, id); err != nil {
		return err
	}
	res, err := a.relay.Cancel(r.Context(), id)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, CancelResponse{TaskID: res.ID, TaskStatus: string(res.Status), Cancelled: res.Cancelled})
	return nil
}

// doneRequest is the optional body of POST /v1/tasks/{id}/done.
type doneRequest struct {
	Permit     string `json:"permit"`
	HTTPStatus int    `json:"http_status"`
}

// done is POST /v1/tasks/{id}/done: the caller of a permitted online task reports its call
// ended, which frees the endpoint's concurrency slot. The permit (body or Sluice-Permit header)
// proves the caller holds the task.
func (a *API) done(w http.ResponseWriter, r *http.Request) error {
	tok, _ := tenant.FromContext(r.Context())
	id := r.PathValue("id")
	var req doneRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	permit := req.Permit
	if permit == "" {
		permit = permitOf(r)
	}
	if permit == "" {
		return httpapi.InvalidArg("permit", "send the task's permit in the body or the %s header", relay.PermitHeader)
	}
	if req.HTTPStatus != 0 && (req.HTTPStatus < 100 || req.HTTPStatus > 599) {
		return httpapi.InvalidArg("http_status", "%d is not an HTTP status", req.HTTPStatus)
	}
	if _, err := a.owned(r, tok, id); err != nil {
		return err
	}
	if err := a.relay.Done(r.Context(), id, permit, relay.DoneParams{HTTPStatus: req.HTTPStatus}); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, CancelResponse{TaskID: id, TaskStatus: string(relay.StatusCompleted)})
	return nil
}

// permitOf reads a permit from the Sluice-Permit header or "Authorization: Permit <permit>".
func permitOf(r *http.Request) string {
	if p := r.Header.Get(relay.PermitHeader); p != "" {
		return strings.TrimSpace(p)
	}
	if p, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Permit "); ok {
		return strings.TrimSpace(p)
	}
	return ""
}

// PermitResponse is the answer of GET /v1/permits/check to a valid permit.
type PermitResponse struct {
	TaskID    string    `json:"task_id"`
	Endpoint  string    `json:"endpoint"`
	ExpiresAt time.Time `json:"expires_at"`
}

// The request headers of GET /v1/permits/check that a gateway sets from its own configuration
// and from the call it guards (deploy/nginx-permit.conf). A gateway must set them itself, never
// pass on the caller's.
const (
	// EndpointHeader names the endpoint the gateway guards (or the query parameter endpoint).
	EndpointHeader = "Sluice-Endpoint"
	// OriginalMethodHeader and OriginalURIHeader are the guarded call's method and request URI,
	// checked when the endpoint binds permits to methods or a path prefix.
	OriginalMethodHeader = "X-Original-Method"
	OriginalURIHeader    = "X-Original-URI"
)

// checkPermit is GET /v1/permits/check?endpoint=<name>, for nginx auth_request: 200 (and the
// permit used up) for a valid, unused permit of that endpoint in the Sluice-Permit header; 400
// without an endpoint; 401 without a permit; 403 permit_mismatch for a permit of another
// endpoint (or a method or path the endpoint does not admit), permit_refused for a forged,
// reused or expired one or a task no longer permitted. The task id and endpoint come back in the
// Sluice-Task-Id and Sluice-Endpoint headers too, for auth_request_set.
func (a *API) checkPermit(w http.ResponseWriter, r *http.Request) error {
	endpoint, err := gatewayEndpoint(r)
	if err != nil {
		return err
	}
	permit := permitOf(r)
	if permit == "" {
		return &httpapi.Error{Code: httpapi.CodeUnauthenticated, Message: "send the permit in the " + relay.PermitHeader + " header"}
	}
	call := relay.PermitCall{Endpoint: endpoint, Method: r.Header.Get(OriginalMethodHeader), Path: r.Header.Get(OriginalURIHeader)}
	info, err := a.relay.CheckPermit(r.Context(), permit, call)
	switch {
	case errors.Is(err, relay.ErrNotPermitted) || errors.Is(err, relay.ErrNotFound):
		return &httpapi.Error{Code: httpapi.CodePermitRefused, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, sluice.ErrInvalid):
		return checkFieldErr(err)
	case err != nil:
		return err
	}
	w.Header().Set("Sluice-Task-Id", info.TaskID)
	w.Header().Set(EndpointHeader, info.Endpoint)
	httpapi.WriteJSON(w, http.StatusOK, PermitResponse{TaskID: info.TaskID, Endpoint: info.Endpoint, ExpiresAt: info.Expires.UTC()})
	return nil
}

// gatewayEndpoint is the endpoint a permit check is for: the query parameter endpoint or the
// Sluice-Endpoint header, which the gateway sets from its own configuration. Named twice
// differently (a caller's forged header passed on next to the gateway's parameter), the check
// is refused: the permit is not judged against a name the caller chose.
func gatewayEndpoint(r *http.Request) (string, error) {
	names := append(r.URL.Query()["endpoint"], r.Header.Values(EndpointHeader)...)
	if len(names) == 0 || names[0] == "" {
		return "", httpapi.InvalidArg("endpoint", "name the endpoint this gateway guards: ?endpoint=<name>, or the %s "+
			"header set from the gateway's own configuration (never from the caller)", EndpointHeader)
	}
	for _, n := range names[1:] {
		if n != names[0] {
			return "", &httpapi.Error{Code: httpapi.CodePermitMismatch,
				Message: fmt.Sprintf("the endpoint is named twice, differently (%.64q and %.64q): the gateway's own setting must be the only one", names[0], n)}
		}
	}
	return names[0], nil
}

// checkFieldErr says which part of a permit check request a relay field error is about.
func checkFieldErr(err error) error {
	var fe *sluice.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	switch fe.Field {
	case "method":
		return httpapi.InvalidArg(OriginalMethodHeader, "%s (the %s header, set by the gateway)", fe.Reason, OriginalMethodHeader)
	case "path":
		return httpapi.InvalidArg(OriginalURIHeader, "%s (the %s header, set by the gateway)", fe.Reason, OriginalURIHeader)
	}
	return err
}
