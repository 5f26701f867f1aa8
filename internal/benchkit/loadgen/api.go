package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/jsonscan"
)

// lease names a consumed job, so it can be acked.
type lease struct {
	queue    string
	id       string
	delivery int
}

// dialect speaks one HTTP API. Its methods are called by many workers at once; each worker
// passes its own connection.
type dialect interface {
	publish(ctx context.Context, c *httpConn, q string) error
	// bulkPublish publishes n jobs in one request (only when hasBulk).
	bulkPublish(ctx context.Context, c *httpConn, q string, n int) error
	// consume leases up to n jobs and appends them to leases.
	consume(ctx context.Context, c *httpConn, q string, n int, leases []lease) ([]lease, error)
	ack(ctx context.Context, c *httpConn, l lease) error
	hasBulk() bool
}

// expect sends a request and fails unless the answer is a success (2xx; want documents the
// status the API promises).
func (c *httpConn) expect(ctx context.Context, method, path, contentType string, body []byte, want int) error {
	status, err := c.do(ctx, method, path, contentType, body)
	if err != nil {
		return err
	}
	if status != want && status/100 != 2 {
		return &StatusError{Method: method, Path: path, Status: status, Body: c.body.String()}
	}
	return nil
}

// StatusError is a response with an unexpected status.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *StatusError) Error() string {
	var native struct {
		Error struct{ Code, Message string }
	}
	msg := strings.TrimSpace(e.Body)
	if json.Unmarshal([]byte(e.Body), &native) == nil && native.Error.Code != "" {
		msg = native.Error.Code + ": " + native.Error.Message
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, msg)
}

const jsonType = "application/json"

// nativeAPI speaks the /v1 API.
type nativeAPI struct {
	base  string // /v1/ns/{ns}
	one   []byte // body of a single publish: one job
	bulk  []byte // body of a bulk publish of cfg.Batch jobs
	bulkN int
}

func newNative(cfg Config, payload string) *nativeAPI {
	job, _ := json.Marshal(map[string]any{
		"payload": payload,
		"tries":   1,
		"ttl":     int(cfg.JobTTL / time.Second),
	})
	a := &nativeAPI{base: "/v1/ns/" + url.PathEscape(cfg.Namespace), one: job}
	a.bulk, a.bulkN = a.bulkBody(cfg.Batch), cfg.Batch
	return a
}

func (a *nativeAPI) bulkBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jobs":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(a.one)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func (a *nativeAPI) hasBulk() bool { return true }

func (a *nativeAPI) publish(ctx context.Context, c *httpConn, q string) error {
	return c.expect(ctx, http.MethodPost, a.base+"/queues/"+q+"/jobs", jsonType, a.one, http.StatusCreated)
}

func (a *nativeAPI) bulkPublish(ctx context.Context, c *httpConn, q string, n int) error {
	body := a.bulk
	if n != a.bulkN {
		body = a.bulkBody(n)
	}
	return c.expect(ctx, http.MethodPost, a.base+"/queues/"+q+"/jobs", jsonType, body, http.StatusCreated)
}

// consumeTTR is the lease (seconds) the bench's consumers take: long enough that no lease
// expires before the run acks it.
const consumeTTR = 300

func (a *nativeAPI) consume(ctx context.Context, c *httpConn, q string, n int, leases []lease) ([]lease, error) {
	body := `{"queues":["` + q + `"],"count":` + strconv.Itoa(n) + `,"ttr":` + strconv.Itoa(consumeTTR) + `,"timeout":0}`
	if err := c.expect(ctx, http.MethodPost, a.base+"/consume", jsonType, []byte(body), http.StatusOK); err != nil {
		return leases, err
	}
	if out, ok := leasesOf(c.body.Bytes(), leases); ok {
		return out, nil
	}
	var resp struct {
		Jobs []struct {
			JobID    string `json:"job_id"`
			Queue    string `json:"queue"`
			Delivery int    `json:"delivery"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(c.body.Bytes(), &resp); err != nil {
		return leases, fmt.Errorf("consume: decode response: %w", err)
	}
	for _, j := range resp.Jobs {
		leases = append(leases, lease{queue: j.Queue, id: j.JobID, delivery: j.Delivery})
	}
	return leases, nil
}

// leasesOf appends the leases of a native consume answer, read without reflection (the load
// generator shares the machine with the server it measures, so its own cost counts). It reports
// false, with leases as they were, when the answer is not exactly what the server writes (valid
// JSON, the member names it uses, each once); encoding/json reads it then.
func leasesOf(body []byte, leases []lease) ([]lease, bool) {
	if !json.Valid(body) {
		return leases, false
	}
	n := len(leases)
	var top seenNames
	ok := jsonscan.Members(body, func(name string, v []byte) bool {
		if name != "jobs" || !top.first(name) {
			return false
		}
		return jsonscan.Elements(v, func(job []byte) bool {
			var l lease
			if !readLease(job, nativeJobMembers, &l) || l.queue == "" || l.delivery == 0 {
				return false
			}
			leases = append(leases, l)
			return true
		})
	})
	if !ok {
		return leases[:n], false
	}
	return leases, true
}

// readLease reads the job id, queue (a non-empty one replaces l's) and delivery of one job object
// whose member names are all in names, each once; false when it is not such an object or has no id.
func readLease(obj []byte, names map[string]bool, l *lease) bool {
	var seen seenNames
	ok := jsonscan.Members(obj, func(name string, v []byte) bool {
		if !names[name] || !seen.first(name) {
			return false
		}
		var ok bool
		switch name {
		case "job_id":
			l.id, ok = jsonscan.String(v)
		case "queue":
			var queue string
			if queue, ok = jsonscan.String(v); ok && queue != "" {
				l.queue = queue
			}
		case "delivery":
			l.delivery, ok = jsonscan.Int(v)
		default:
			return true
		}
		return ok
	})
	return ok && l.id != ""
}

// nativeJobMembers are the member names of a job in a native consume answer.
var nativeJobMembers = map[string]bool{
	"job_id": true, "queue": true, "payload": true, "payload_base64": true, "delivery": true,
	"remaining_tries": true, "priority": true, "attributes": true, "published_at": true,
	"elapsed_ms": true, "lease_until": true, "expires_at": true,
}

// lmstfyJobMembers are the member names of a job in an lmstfy consume answer.
var lmstfyJobMembers = map[string]bool{
	"msg": true, "namespace": true, "queue": true, "job_id": true, "data": true, "ttl": true,
	"elapsed_ms": true, "remain_tries": true, "attributes": true,
}

// seenNames refuses a member name met twice (encoding/json would keep the last one).
type seenNames map[string]bool

func (s *seenNames) first(name string) bool {
	if *s == nil {
		*s = seenNames{}
	}
	if (*s)[name] {
		return false
	}
	(*s)[name] = true
	return true
}

func (a *nativeAPI) ack(ctx context.Context, c *httpConn, l lease) error {
	return c.expect(ctx, http.MethodPost, a.base+"/queues/"+l.queue+"/jobs/"+l.id+"/ack", jsonType,
		[]byte(`{"delivery":`+strconv.Itoa(l.delivery)+`}`), http.StatusNoContent)
}

// lmstfyAPI speaks lmstfy's /api routes.
type lmstfyAPI struct {
	base    string // /api/{ns}
	payload []byte
	element []byte // one element of a bulk publish: the payload as a JSON string
	bulk    []byte
	bulkN   int
	query   string
}

func newLmstfy(cfg Config, payload string) *lmstfyAPI {
	elem, _ := json.Marshal(payload[:max(len(payload)-2, 1)]) // quotes included, BodySize bytes
	a := &lmstfyAPI{
		base:    "/api/" + url.PathEscape(cfg.Namespace),
		payload: []byte(payload),
		element: elem,
		query:   "?tries=1&delay=0&ttl=" + strconv.Itoa(int(cfg.JobTTL/time.Second)),
	}
	a.bulk, a.bulkN = a.bulkBody(cfg.Batch), cfg.Batch
	return a
}

func (a *lmstfyAPI) bulkBody(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(a.element)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func (a *lmstfyAPI) hasBulk() bool { return true }

func (a *lmstfyAPI) publish(ctx context.Context, c *httpConn, q string) error {
	return c.expect(ctx, http.MethodPut, a.base+"/"+q+a.query, "text/plain", a.payload, http.StatusCreated)
}

// bulkPublish uses PUT /api/{ns}/{q}/bulk (lmstfy takes at most 64 jobs per request): a JSON
// array whose elements become the jobs' data.
func (a *lmstfyAPI) bulkPublish(ctx context.Context, c *httpConn, q string, n int) error {
	body := a.bulk
	if n != a.bulkN {
		body = a.bulkBody(n)
	}
	return c.expect(ctx, http.MethodPut, a.base+"/"+q+"/bulk"+a.query, jsonType, body, http.StatusCreated)
}

type lmstfyJob struct {
	JobID string `json:"job_id"`
	Queue string `json:"queue"`
}

func (a *lmstfyAPI) consume(ctx context.Context, c *httpConn, q string, n int, leases []lease) ([]lease, error) {
	path := a.base + "/" + q + "?timeout=0&ttr=" + strconv.Itoa(consumeTTR) + "&count=" + strconv.Itoa(n)
	status, err := c.do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return leases, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusNotFound:
		return leases, nil // lmstfy's "no job available"
	default:
		return leases, &StatusError{Method: http.MethodGet, Path: path, Status: status, Body: c.body.String()}
	}
	// An answer to a consume of several jobs is an array, except from lmstfy servers without
	// batch consume (1.0), which send one job whatever count asked for.
	one := n == 1 || bytes.HasPrefix(c.body.Bytes(), []byte("{"))
	if out, ok := lmstfyLeasesOf(c.body.Bytes(), q, one, leases); ok {
		return out, nil
	}
	var jobs []lmstfyJob
	if one {
		var j lmstfyJob
		err = json.Unmarshal(c.body.Bytes(), &j)
		jobs = append(jobs, j)
	} else {
		err = json.Unmarshal(c.body.Bytes(), &jobs)
	}
	if err != nil {
		return leases, fmt.Errorf("consume: decode response: %w", err)
	}
	for _, j := range jobs {
		leases = append(leases, lease{queue: cmpOr(j.Queue, q), id: j.JobID})
	}
	return leases, nil
}

// lmstfyLeasesOf appends the leases of an lmstfy consume answer (one job object, or an array when
// more than one was asked for), read without reflection; false, with leases as they were, when the
// answer is not exactly what the server writes (see leasesOf).
func lmstfyLeasesOf(body []byte, q string, one bool, leases []lease) ([]lease, bool) {
	if !json.Valid(body) {
		return leases, false
	}
	n := len(leases)
	job := func(obj []byte) bool {
		l := lease{queue: q}
		if !readLease(obj, lmstfyJobMembers, &l) {
			return false
		}
		leases = append(leases, l)
		return true
	}
	var ok bool
	if one {
		ok = job(body)
	} else {
		ok = jsonscan.Elements(body, job)
	}
	if !ok {
		return leases[:n], false
	}
	return leases, true
}

func (a *lmstfyAPI) ack(ctx context.Context, c *httpConn, l lease) error {
	return c.expect(ctx, http.MethodDelete, a.base+"/"+l.queue+"/job/"+l.id, "", nil, http.StatusNoContent)
}
