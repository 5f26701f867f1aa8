package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// lease names a consumed job, so it can be acked.
type lease struct {
	queue    string
	id       string
	delivery int
}

// dialect speaks one HTTP API. Its methods are called by many workers at once; each worker
// passes its own conn, which holds the buffers it reuses.
type dialect interface {
	publish(ctx context.Context, c *conn, q string) error
	// bulkPublish publishes n jobs in one request (only when hasBulk).
	bulkPublish(ctx context.Context, c *conn, q string, n int) error
	consume(ctx context.Context, c *conn, q string, n int, leases []lease) ([]lease, error)
	ack(ctx context.Context, c *conn, l lease) error
	hasBulk() bool
}

// conn is one worker's HTTP client state.
type conn struct {
	client *http.Client
	buf    bytes.Buffer
}

// do sends a request and reads the response body into c.buf. A status other than want is an
// error carrying the server's message.
func (c *conn) do(req *http.Request, want int) error {
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("%s %s: read response: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode != want {
		return &StatusError{Method: req.Method, Path: req.URL.Path, Status: resp.StatusCode, Body: c.buf.String()}
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

// nativeAPI speaks the /v1 API.
type nativeAPI struct {
	base  string // URL + /v1/ns/{ns}
	auth  string
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
	a := &nativeAPI{
		base: cfg.URL + "/v1/ns/" + url.PathEscape(cfg.Namespace),
		one:  job,
	}
	if cfg.Token != "" {
		a.auth = "Bearer " + cfg.Token
	}
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

func (a *nativeAPI) post(ctx context.Context, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.auth != "" {
		req.Header.Set("Authorization", a.auth)
	}
	return req, nil
}

func (a *nativeAPI) publish(ctx context.Context, c *conn, q string) error {
	req, err := a.post(ctx, "/queues/"+q+"/jobs", a.one)
	if err != nil {
		return err
	}
	return c.do(req, http.StatusCreated)
}

func (a *nativeAPI) bulkPublish(ctx context.Context, c *conn, q string, n int) error {
	body := a.bulk
	if n != a.bulkN {
		body = a.bulkBody(n)
	}
	req, err := a.post(ctx, "/queues/"+q+"/jobs", body)
	if err != nil {
		return err
	}
	return c.do(req, http.StatusCreated)
}

// consumeTTR is the lease the bench's consumers take: long enough that no lease expires before
// the run acks it.
const consumeTTR = 300

func (a *nativeAPI) consume(ctx context.Context, c *conn, q string, n int, leases []lease) ([]lease, error) {
	body := `{"queues":["` + q + `"],"count":` + strconv.Itoa(n) + `,"ttr":` + strconv.Itoa(consumeTTR) + `,"timeout":0}`
	req, err := a.post(ctx, "/consume", []byte(body))
	if err != nil {
		return leases, err
	}
	if err := c.do(req, http.StatusOK); err != nil {
		return leases, err
	}
	var resp struct {
		Jobs []struct {
			JobID    string `json:"job_id"`
			Queue    string `json:"queue"`
			Delivery int    `json:"delivery"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(c.buf.Bytes(), &resp); err != nil {
		return leases, fmt.Errorf("consume: decode response: %w", err)
	}
	for _, j := range resp.Jobs {
		leases = append(leases, lease{queue: j.Queue, id: j.JobID, delivery: j.Delivery})
	}
	return leases, nil
}

func (a *nativeAPI) ack(ctx context.Context, c *conn, l lease) error {
	req, err := a.post(ctx, "/queues/"+l.queue+"/jobs/"+l.id+"/ack", []byte(`{"delivery":`+strconv.Itoa(l.delivery)+`}`))
	if err != nil {
		return err
	}
	return c.do(req, http.StatusOK)
}

// lmstfyAPI speaks lmstfy's /api routes.
type lmstfyAPI struct {
	base    string // URL + /api/{ns}
	token   string
	payload []byte
	query   string
}

func newLmstfy(cfg Config, payload string) *lmstfyAPI {
	return &lmstfyAPI{
		base:    cfg.URL + "/api/" + url.PathEscape(cfg.Namespace),
		token:   cfg.Token,
		payload: []byte(payload),
		query:   "?tries=1&delay=0&ttl=" + strconv.Itoa(int(cfg.JobTTL/time.Second)),
	}
}

func (a *lmstfyAPI) hasBulk() bool { return false }

func (a *lmstfyAPI) request(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		return nil, err
	}
	if a.token != "" {
		req.Header.Set("X-Token", a.token)
	}
	return req, nil
}

func (a *lmstfyAPI) publish(ctx context.Context, c *conn, q string) error {
	req, err := a.request(ctx, http.MethodPut, "/"+q+a.query, a.payload)
	if err != nil {
		return err
	}
	return c.do(req, http.StatusCreated)
}

func (a *lmstfyAPI) bulkPublish(context.Context, *conn, string, int) error {
	return fmt.Errorf("the lmstfy API has no bulk publish")
}

type lmstfyJob struct {
	JobID string `json:"job_id"`
	Queue string `json:"queue"`
}

func (a *lmstfyAPI) consume(ctx context.Context, c *conn, q string, n int, leases []lease) ([]lease, error) {
	req, err := a.request(ctx, http.MethodGet, "/"+q+"?timeout=0&ttr="+strconv.Itoa(consumeTTR)+"&count="+strconv.Itoa(n), nil)
	if err != nil {
		return leases, err
	}
	err = c.do(req, http.StatusOK)
	if se := (*StatusError)(nil); errors.As(err, &se) && se.Status == http.StatusNotFound {
		return leases, nil // lmstfy's "no job available"
	}
	if err != nil {
		return leases, err
	}
	var jobs []lmstfyJob
	if n == 1 {
		var j lmstfyJob
		err = json.Unmarshal(c.buf.Bytes(), &j)
		jobs = append(jobs, j)
	} else {
		err = json.Unmarshal(c.buf.Bytes(), &jobs)
	}
	if err != nil {
		return leases, fmt.Errorf("consume: decode response: %w", err)
	}
	for _, j := range jobs {
		leases = append(leases, lease{queue: cmp.Or(j.Queue, q), id: j.JobID})
	}
	return leases, nil
}

func (a *lmstfyAPI) ack(ctx context.Context, c *conn, l lease) error {
	req, err := a.request(ctx, http.MethodDelete, "/"+l.queue+"/job/"+l.id, nil)
	if err != nil {
		return err
	}
	return c.do(req, http.StatusNoContent)
}
