package lmstfy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/server/internal/httpapi"

	"github.com/sluicehq/sluice/queue"
)

// jobJSON is a job as lmstfy's consume and peek routes show it. Data is base64 in JSON, as
// lmstfy's is.
type jobJSON struct {
	Msg         string            `json:"msg,omitempty"` // "new job" for consume; absent for peek
	Namespace   string            `json:"namespace"`
	Queue       string            `json:"queue"`
	JobID       string            `json:"job_id"`
	Data        []byte            `json:"data"`
	TTL         int64             `json:"ttl"`        // seconds the job has left to live; 0: no ttl
	ElapsedMS   int64             `json:"elapsed_ms"` // since publish
	RemainTries int64             `json:"remain_tries"`
	Attributes  map[string]string `json:"attributes"`
}

// remainingTTL is the job's remaining lifetime at now in whole seconds, rounded as Redis's TTL
// command rounds (lmstfy reads it there); 0 means the job has no ttl.
func remainingTTL(expires, now time.Time) int64 {
	if expires.IsZero() {
		return 0
	}
	return max(1, int64((expires.Sub(now)+500*time.Millisecond)/time.Second))
}

func jobData(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// visibleAttrs are a job's attributes as these routes show them: without the server's reserved
// ones, and null when none is left (as lmstfy shows a job without attributes).
func visibleAttrs(a map[string]string) map[string]string {
	out := httpapi.PublicAttributes(a)
	if len(out) == 0 {
		return nil
	}
	return out
}

func deliveredJob(d queue.Delivery) jobJSON {
	now := d.PublishedAt.Add(d.Elapsed) // Redis's clock at delivery
	return jobJSON{
		Msg: "new job", Namespace: d.Namespace, Queue: d.Queue, JobID: d.ID, Data: jobData(d.Payload),
		TTL: remainingTTL(d.ExpiresAt, now), ElapsedMS: d.Elapsed.Milliseconds(),
		RemainTries: int64(d.RemainingTries), Attributes: visibleAttrs(d.Attributes),
	}
}

func peekedJob(j *queue.Job) jobJSON {
	now := time.Now()
	return jobJSON{
		Namespace: j.Namespace, Queue: j.Queue, JobID: j.ID, Data: jobData(j.Payload),
		TTL: remainingTTL(j.ExpiresAt, now), ElapsedMS: max(0, now.Sub(j.PublishedAt).Milliseconds()),
		RemainTries: int64(j.RemainingTries), Attributes: visibleAttrs(j.Attributes),
	}
}

// publishOpts are the query parameters of lmstfy's publish routes.
type publishOpts struct {
	delay, ttl time.Duration
	tries      int
	priority   int
}

// publishParams reads delay, ttl, tries and priority with lmstfy's defaults, messages and
// order of checks. It answers the request itself when a parameter is bad.
func publishParams(c call) (publishOpts, error) {
	delay, ok := uintParam(c.query, "delay", defaultDelay, 32)
	if !ok {
		return publishOpts{}, errorf(http.StatusBadRequest, "invalid delay")
	}
	ttl, ok := uintParam(c.query, "ttl", defaultTTL, 32)
	if !ok {
		return publishOpts{}, errorf(http.StatusBadRequest, "invalid ttl")
	}
	// ttl 0 means forever. lmstfy lets ttl equal delay, which loses the job the moment it is due;
	// Sluice asks for a ttl longer than the delay.
	if ttl > 0 && ttl < delay {
		return publishOpts{}, errorf(http.StatusBadRequest, "ttl is shorter than delay")
	}
	if ttl > 0 && ttl == delay {
		return publishOpts{}, errorf(http.StatusBadRequest, "ttl must be longer than delay")
	}
	tries, ok := uintParam(c.query, "tries", defaultTries, 16)
	if !ok {
		return publishOpts{}, errorf(http.StatusBadRequest, "invalid tries")
	}
	if tries == 0 {
		return publishOpts{}, errorf(http.StatusBadRequest, "tries shouldn't be zero")
	}
	// Some lmstfy versions take a priority (0..255, higher first); so does Sluice.
	priority, ok := uintParam(c.query, "priority", 0, 8)
	if !ok {
		return publishOpts{}, errorf(http.StatusBadRequest, "invalid priority")
	}
	if c.tok.MaxPriority >= 0 && int(priority) > c.tok.MaxPriority {
		priority = uint64(c.tok.MaxPriority) // the token's cap, as on the native API
	}
	return publishOpts{
		delay: wholeSeconds(delay), ttl: wholeSeconds(ttl), tries: int(tries), priority: int(priority),
	}, nil
}

// publishInput reads what every publish route checks first, in lmstfy's order: the job options
// of the query, then the body.
func publishInput(r *http.Request, c call) (publishOpts, []byte, error) {
	opts, err := publishParams(c)
	if err != nil {
		return publishOpts{}, nil, err
	}
	body, err := readBody(r)
	return opts, body, err
}

// readBody reads the request body; a body over the server's limit answers 413 "body too large".
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, errorf(http.StatusRequestEntityTooLarge, "body too large")
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "failed to read body")
	}
	return body, nil
}

// headerAttributes collects job attributes from Job-Attr-* headers when the request carries
// "Enable-Job-Version: yes", as lmstfy's current release does: names lowercased (clients read
// attributes["trace-id"], whatever case the header had on the wire), names cut at 32 bytes and
// values at 128, empty values left out, at most 16.
func headerAttributes(r *http.Request) (map[string]string, error) {
	if !strings.EqualFold(r.Header.Get("Enable-Job-Version"), "yes") {
		return nil, nil
	}
	attrs := map[string]string{}
	for k, v := range r.Header {
		if len(k) <= len(attributePrefix) || !strings.EqualFold(k[:len(attributePrefix)], attributePrefix) ||
			len(v) == 0 || v[0] == "" {
			continue
		}
		name := strings.ToLower(cutUTF8(k[len(attributePrefix):], maxAttributeName))
		attrs[name] = cutUTF8(v[0], maxAttributeValue)
	}
	if len(attrs) > maxAttributes {
		return nil, errorf(http.StatusBadRequest, "too many attributes, cannot exceed 16")
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	return attrs, nil
}

// cutUTF8 cuts s to at most n bytes, at a character boundary (a value may carry UTF-8).
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (o publishOpts) job(c call, payload []byte, attrs map[string]string) queue.PublishParams {
	return queue.PublishParams{
		Namespace: c.ns, Queue: c.q, Payload: payload, Priority: o.priority, Delay: o.delay,
		Tries: o.tries, TTL: o.ttl, TTR: defaultTTR * time.Second, Attributes: attrs,
	}
}

// publish is PUT /api/{ns}/{q}: publish one job, the body is its data.
func (a *API) publish(w http.ResponseWriter, r *http.Request, c call) error {
	return a.publishOne(w, r, c, "")
}

// republish is PUT /api/{ns}/{q}/job/{id}: finish the job (ack it) and publish the body as
// a new job. The new job is published first, so a failure in between duplicates rather than
// loses work.
func (a *API) republish(w http.ResponseWriter, r *http.Request, c call) error {
	return a.publishOne(w, r, c, r.PathValue("id"))
}

func (a *API) publishOne(w http.ResponseWriter, r *http.Request, c call, oldID string) error {
	opts, body, err := publishInput(r, c)
	if err != nil {
		return err
	}
	attrs, err := headerAttributes(r)
	if err != nil {
		return err
	}
	res, err := a.queue.Publish(r.Context(), opts.job(c, body, attrs))
	if err != nil {
		return err
	}
	if oldID != "" {
		if err := a.finish(r.Context(), c.ns, c.q, oldID); err != nil {
			return err
		}
	}
	writePublished(w, res.ID)
	return nil
}

// publishBulk is PUT /api/{ns}/{q}/bulk: the body is a JSON array; each element (as JSON
// text) is the data of one job. All are published or none.
func (a *API) publishBulk(w http.ResponseWriter, r *http.Request, c call) error {
	opts, body, err := publishInput(r, c)
	if err != nil {
		return err
	}
	var jobs []json.RawMessage
	if err := json.Unmarshal(body, &jobs); err != nil {
		return errorf(http.StatusBadRequest, "request body should be an array of objects")
	}
	switch {
	case len(jobs) == 0:
		return errorf(http.StatusBadRequest, "no jobs")
	case len(jobs) > maxBulkJobs:
		return errorf(http.StatusBadRequest, "too many jobs")
	}
	attrs, err := headerAttributes(r)
	if err != nil {
		return err
	}
	ps := make([]queue.PublishParams, len(jobs))
	for i, j := range jobs {
		ps[i] = opts.job(c, j, attrs)
	}
	res, err := a.queue.PublishMany(r.Context(), ps)
	if err != nil {
		return err
	}
	ids := make([]string, len(res))
	for i, pr := range res {
		ids[i] = pr.ID
	}
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"msg": "published", "job_ids": ids})
	return nil
}

// consume is GET /api/{ns}/{q1}[,{q2}...]: lease up to count jobs, earlier queues first,
// waiting up to timeout seconds for one. One job answers as an object, count > 1 as an array.
func (a *API) consume(w http.ResponseWriter, r *http.Request, c call) error {
	ttr, ok := uintParam(c.query, "ttr", defaultTTR, 32)
	if !ok {
		return errorf(http.StatusBadRequest, "invalid ttr")
	}
	timeout, ok := uintParam(c.query, "timeout", defaultTimeout, 32)
	if !ok {
		return errorf(http.StatusBadRequest, "invalid timeout")
	}
	count, ok := uintParam(c.query, "count", 1, 32)
	if !ok || count == 0 || count > maxConsumeCount {
		return errorf(http.StatusBadRequest, "invalid count")
	}
	// freeze_tries is accepted for lmstfy's clients (they always send it); every delivery counts.
	if raw, present := c.query["freeze_tries"]; present {
		if _, err := strconv.ParseBool(raw[0]); err != nil {
			return errorf(http.StatusBadRequest, "invalid freeze_tries value")
		}
	}
	var queues []string
	for _, q := range strings.Split(c.q, ",") {
		if q != "" && !slices.Contains(queues, q) {
			queues = append(queues, q)
		}
	}
	if len(queues) == 0 {
		return errorf(http.StatusBadRequest, "invalid queue name(s)")
	}
	// A graceful shutdown releases blocked consumes.
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = httpapi.WithDrain(ctx, a.cfg.Drain)
		defer cancel()
	}
	if a.cfg.WatchConsumer != nil {
		defer a.cfg.WatchConsumer(ctx, c.ns, queues)()
	}
	ds, err := a.queue.Consume(ctx, queue.ConsumeParams{
		Namespace: c.ns,
		Queues:    queues,
		Count:     int(count),
		TTR:       wholeSeconds(ttr), // 0: the job's own (lmstfy's default for jobs published here)
		Timeout:   min(wholeSeconds(timeout), a.cfg.MaxConsumeTimeout),
	})
	shuttingDown := a.cfg.Drain.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, queue.ErrClosed))
	if err != nil && !shuttingDown {
		return err
	}
	// A consume cut short by a graceful shutdown answers as one that found nothing.
	if len(ds) == 0 {
		httpapi.WriteJSON(w, http.StatusNotFound, map[string]string{"msg": "no job available"})
		return nil
	}
	if count == 1 {
		writeJob(w, deliveredJob(ds[0]))
		return nil
	}
	out := make([]jobJSON, len(ds))
	for i, d := range ds {
		out[i] = deliveredJob(d)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// deleteJob is DELETE /api/{ns}/{q}/job/{id}, lmstfy's ack: the job is gone afterwards,
// whatever its state. It answers 204 for unknown jobs too, as lmstfy does.
func (a *API) deleteJob(w http.ResponseWriter, r *http.Request, c call) error {
	if err := a.finish(r.Context(), c.ns, c.q, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// finish ends a job for lmstfy's ack, which names no delivery: a job under a running lease
// is acked (its current delivery, so it counts as done), any other job is deleted (queue.Finish).
// An unknown job is no error: lmstfy's ack means "never again".
func (a *API) finish(ctx context.Context, ns, q, id string) error {
	if id == "" || len(id) > 255 {
		return nil // no such job
	}
	if err := a.queue.Finish(ctx, ns, q, id); err != nil && !errors.Is(err, queue.ErrNotFound) {
		return err
	}
	return nil
}

// peekQueue is GET /api/{ns}/{q}/peek: the job a consumer would get next.
func (a *API) peekQueue(w http.ResponseWriter, r *http.Request, c call) error {
	job, err := a.queue.Peek(r.Context(), c.ns, c.q)
	return writePeeked(w, job, err, "the queue is empty")
}

// writePeeked answers a peek: the job, or lmstfy's 404 with notFound, or the error.
func writePeeked(w http.ResponseWriter, job *queue.Job, err error, notFound string) error {
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return errorf(http.StatusNotFound, notFound)
	case err != nil:
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, peekedJob(job))
	return nil
}

// peekJob is GET /api/{ns}/{q}/job/{id}: a job in any state.
func (a *API) peekJob(w http.ResponseWriter, r *http.Request, c call) error {
	id := r.PathValue("id")
	if id == "" || len(id) > 255 {
		return errorf(http.StatusNotFound, "job not found")
	}
	job, err := a.queue.Get(r.Context(), c.ns, c.q, id)
	return writePeeked(w, job, err, "job not found")
}

// queueSize is GET /api/{ns}/{q}/size: the number of ready jobs.
func (a *API) queueSize(w http.ResponseWriter, r *http.Request, c call) error {
	st, err := a.queue.Stats(r.Context(), c.ns, c.q)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"namespace": c.ns, "queue": c.q, "size": st.Ready})
	return nil
}

// destroyQueue is DELETE /api/{ns}/{q}: remove the queue's jobs. lmstfy drops the ready
// ones only; Sluice drops them in every state (Purge), the queue itself stays usable.
func (a *API) destroyQueue(w http.ResponseWriter, r *http.Request, c call) error {
	if _, err := a.queue.Purge(r.Context(), c.ns, c.q); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// peekDeadLetter is GET /api/{ns}/{q}/deadletter: the dead letter's size and oldest job.
func (a *API) peekDeadLetter(w http.ResponseWriter, r *http.Request, c call) error {
	res, err := a.queue.DeadList(r.Context(), queue.DeadListParams{Namespace: c.ns, Queue: c.q, Limit: 1})
	if err != nil {
		return err
	}
	head := ""
	if len(res.Jobs) > 0 {
		head = res.Jobs[0].ID
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{
		"namespace": c.ns, "queue": c.q, "deadletter_size": res.Total, "deadletter_head": head,
	})
	return nil
}

// deadLimit reads the limit of the dead letter routes (default 1, at least 1), capped at the
// dead letter's size.
func (a *API) deadLimit(r *http.Request, c call) (int64, error) {
	limit, ok := uintParam(c.query, "limit", 1, 63)
	if !ok || limit == 0 {
		return 0, errorf(http.StatusBadRequest, "invalid limit")
	}
	size, err := a.queue.DeadSize(r.Context(), c.ns, c.q)
	if err != nil {
		return 0, err
	}
	return min(int64(limit), size), nil
}

// deadPages acts on up to limit of the oldest dead jobs a page at a time: page(n) acts on up to n
// (at most MaxDeadPage) and returns how many it did. It stops at a short page and returns how many
// were done.
func deadPages(limit int64, page func(n int) (int, error)) (int64, error) {
	var count int64
	for count < limit {
		n := int(min(limit-count, queue.MaxDeadPage))
		got, err := page(n)
		if err != nil {
			return count, err
		}
		count += int64(got)
		if got < n {
			break
		}
	}
	return count, nil
}

// respawnDeadLetter is PUT /api/{ns}/{q}/deadletter?limit=&ttl=: move up to limit of the
// oldest dead jobs back to ready, with all their tries and a ttl of ttl seconds from now.
func (a *API) respawnDeadLetter(w http.ResponseWriter, r *http.Request, c call) error {
	if limit, ok := uintParam(c.query, "limit", 1, 63); !ok || limit == 0 {
		return errorf(http.StatusBadRequest, "invalid limit")
	}
	ttl, ok := uintParam(c.query, "ttl", defaultTTL, 63)
	if !ok || ttl > uint64(time.Duration(1<<63-1)/time.Second) {
		return errorf(http.StatusBadRequest, "invalid ttl")
	}
	limit, err := a.deadLimit(r, c)
	if err != nil {
		return err
	}
	count, err := deadPages(limit, func(n int) (int, error) {
		ids, err := a.queue.DeadRespawn(r.Context(), queue.DeadRespawnParams{
			Namespace: c.ns, Queue: c.q, Limit: n, TTL: wholeSeconds(ttl),
		})
		return len(ids), err
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"msg": "respawned", "count": count})
	return nil
}

// deleteDeadLetter is DELETE /api/{ns}/{q}/deadletter?limit=: drop up to limit of the
// oldest dead jobs.
func (a *API) deleteDeadLetter(w http.ResponseWriter, r *http.Request, c call) error {
	limit, err := a.deadLimit(r, c)
	if err != nil {
		return err
	}
	if _, err := deadPages(limit, func(n int) (int, error) {
		return a.queue.DeadDelete(r.Context(), queue.DeadDeleteParams{Namespace: c.ns, Queue: c.q, Limit: n})
	}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deadLetterSize is GET /api/{ns}/{q}/deadletter/size.
func (a *API) deadLetterSize(w http.ResponseWriter, r *http.Request, c call) error {
	n, err := a.queue.DeadSize(r.Context(), c.ns, c.q)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"namespace": c.ns, "queue": c.q, "size": n})
	return nil
}

// writeJob answers a consume of one job without reflection: 200 and j as httpapi.WriteJSON
// writes it (a test compares the two), which a consume of one job at a time would otherwise pay
// for on every request.
func writeJob(w http.ResponseWriter, j jobJSON) {
	buf := httpapi.GetBuffer()
	defer httpapi.PutBuffer(buf)
	httpapi.WriteBody(w, http.StatusOK, "application/json", appendJob(httpapi.FreeSpace(buf, 512), j))
}

// appendJob appends j as encoding/json encodes it (HTML escaping off), and a newline.
func appendJob(b []byte, j jobJSON) []byte {
	b = append(b, '{')
	if j.Msg != "" {
		b = append(b, `"msg":`...)
		b = httpapi.AppendJSONString(b, j.Msg)
		b = append(b, ',')
	}
	b = append(b, `"namespace":`...)
	b = httpapi.AppendJSONString(b, j.Namespace)
	b = append(b, `,"queue":`...)
	b = httpapi.AppendJSONString(b, j.Queue)
	b = append(b, `,"job_id":`...)
	b = httpapi.AppendJSONString(b, j.JobID)
	b = append(b, `,"data":`...)
	if j.Data == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, j.Data)
		b = append(b, '"')
	}
	b = append(b, `,"ttl":`...)
	b = strconv.AppendInt(b, j.TTL, 10)
	b = append(b, `,"elapsed_ms":`...)
	b = strconv.AppendInt(b, j.ElapsedMS, 10)
	b = append(b, `,"remain_tries":`...)
	b = strconv.AppendInt(b, j.RemainTries, 10)
	b = append(b, `,"attributes":`...)
	b = httpapi.AppendJSONStringMap(b, j.Attributes)
	return append(b, "}\n"...)
}

// writePublished answers an lmstfy publish without reflection: 201 {"job_id","msg":"published"}
// (httpapi.WriteJSON's bytes for the map it used to write: keys sorted).
func writePublished(w http.ResponseWriter, id string) {
	buf := httpapi.GetBuffer()
	defer httpapi.PutBuffer(buf)
	b := append(httpapi.FreeSpace(buf, 128), `{"job_id":`...)
	b = httpapi.AppendJSONString(b, id)
	b = append(b, `,"msg":"published"}`+"\n"...)
	httpapi.WriteBody(w, http.StatusCreated, "application/json", b)
}
