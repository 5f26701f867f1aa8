package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// lmstfyClient sends exactly the requests of lmstfy's Go client (github.com/bitleak/lmstfy/client,
// whose module the Go proxy does not serve): the same paths, query parameters, X-Token header and
// expected statuses, decoding into the same Job shape. TestLmstfyGoClient replays that client's
// own test suite against Sluice.
type lmstfyClient struct {
	base      *url.URL
	namespace string
	token     string
}

// lmstfyClientJob is the client's Job type.
type lmstfyClientJob struct {
	Namespace   string `json:"namespace"`
	Queue       string `json:"queue"`
	Data        []byte `json:"data"`
	ID          string `json:"job_id"`
	TTL         int64  `json:"ttl"`
	ElapsedMS   int64  `json:"elapsed_ms"`
	RemainTries int64  `json:"remain_tries"`
}

func (c *lmstfyClient) do(method, relativePath string, query url.Values, body []byte) (*http.Response, error) {
	target := url.URL{
		Scheme:   c.base.Scheme,
		Host:     c.base.Host,
		Path:     path.Join("/api", c.namespace, relativePath),
		RawQuery: query.Encode(),
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, target.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Add("X-Token", c.token)
	return http.DefaultClient.Do(req)
}

// apiError is the client's parseResponseError: "[status]error".
func lmstfyClientError(resp *http.Response) error {
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return fmt.Errorf("[%d]%s", resp.StatusCode, e.Error)
}

// call sends a request and decodes a response of status ok into out; a 404 where notFoundNil is
// set is the client's "nil, nil".
func (c *lmstfyClient) call(method, rel string, q url.Values, body []byte, ok int, notFoundNil bool, out any) (bool, error) {
	resp, err := c.do(method, rel, q, body)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if notFoundNil && resp.StatusCode == http.StatusNotFound {
		_, _ = io.Copy(io.Discard, resp.Body)
		return false, nil
	}
	if resp.StatusCode != ok {
		return false, lmstfyClientError(resp)
	}
	if out == nil {
		return true, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, out)
}

func lmstfyPublishQuery(ttl uint32, tries uint16, delay uint32) url.Values {
	q := url.Values{}
	q.Add("ttl", strconv.FormatUint(uint64(ttl), 10))
	q.Add("tries", strconv.FormatUint(uint64(tries), 10))
	q.Add("delay", strconv.FormatUint(uint64(delay), 10))
	return q
}

func (c *lmstfyClient) Publish(queue string, data []byte, ttl uint32, tries uint16, delay uint32) (string, error) {
	return c.publish(queue, "", data, ttl, tries, delay)
}

func (c *lmstfyClient) RePublish(job *lmstfyClientJob, ttl uint32, tries uint16, delay uint32) (string, error) {
	return c.publish(job.Queue, job.ID, job.Data, ttl, tries, delay)
}

func (c *lmstfyClient) publish(queue, ackJobID string, data []byte, ttl uint32, tries uint16, delay uint32) (string, error) {
	rel := queue
	if ackJobID != "" {
		rel = path.Join(rel, "job", ackJobID)
	}
	var out struct {
		JobID string `json:"job_id"`
	}
	_, err := c.call(http.MethodPut, rel, lmstfyPublishQuery(ttl, tries, delay), data, http.StatusCreated, false, &out)
	return out.JobID, err
}

func (c *lmstfyClient) BatchPublish(queue string, jobs []any, ttl uint32, tries uint16, delay uint32) ([]string, error) {
	data, err := json.Marshal(jobs)
	if err != nil {
		return nil, err
	}
	var out struct {
		JobIDs []string `json:"job_ids"`
	}
	_, err = c.call(http.MethodPut, path.Join(queue, "bulk"), lmstfyPublishQuery(ttl, tries, delay), data, http.StatusCreated, false, &out)
	return out.JobIDs, err
}

func lmstfyConsumeQuery(ttr, timeout uint32, freeze bool) url.Values {
	q := url.Values{}
	q.Add("ttr", strconv.FormatUint(uint64(ttr), 10))
	q.Add("timeout", strconv.FormatUint(uint64(timeout), 10))
	q.Add("freeze_tries", strconv.FormatBool(freeze))
	return q
}

func (c *lmstfyClient) Consume(queue string, ttr, timeout uint32) (*lmstfyClientJob, error) {
	job := &lmstfyClientJob{}
	found, err := c.call(http.MethodGet, queue, lmstfyConsumeQuery(ttr, timeout, false), nil, http.StatusOK, true, job)
	if !found || err != nil {
		return nil, err
	}
	return job, nil
}

func (c *lmstfyClient) ConsumeFromQueues(ttr, timeout uint32, queues ...string) (*lmstfyClientJob, error) {
	return c.Consume(strings.Join(queues, ","), ttr, timeout)
}

func (c *lmstfyClient) BatchConsume(queues []string, count, ttr, timeout uint32) ([]*lmstfyClientJob, error) {
	q := url.Values{}
	q.Add("ttr", strconv.FormatUint(uint64(ttr), 10))
	q.Add("count", strconv.FormatUint(uint64(count), 10))
	q.Add("timeout", strconv.FormatUint(uint64(timeout), 10))
	q.Add("freeze_tries", "false")
	var jobs []*lmstfyClientJob
	if count == 1 {
		job := &lmstfyClientJob{}
		found, err := c.call(http.MethodGet, strings.Join(queues, ","), q, nil, http.StatusOK, true, job)
		if found {
			jobs = append(jobs, job)
		}
		return jobs, err
	}
	_, err := c.call(http.MethodGet, strings.Join(queues, ","), q, nil, http.StatusOK, true, &jobs)
	return jobs, err
}

func (c *lmstfyClient) Ack(queue, jobID string) error {
	_, err := c.call(http.MethodDelete, path.Join(queue, "job", jobID), nil, nil, http.StatusNoContent, false, nil)
	return err
}

func (c *lmstfyClient) QueueSize(queue string) (int, error) {
	var out struct {
		Size int `json:"size"`
	}
	_, err := c.call(http.MethodGet, path.Join(queue, "size"), nil, nil, http.StatusOK, false, &out)
	return out.Size, err
}

func (c *lmstfyClient) PeekQueue(queue string) (*lmstfyClientJob, error) {
	job := &lmstfyClientJob{}
	found, err := c.call(http.MethodGet, path.Join(queue, "peek"), nil, nil, http.StatusOK, true, job)
	if !found || err != nil {
		return nil, err
	}
	return job, nil
}

func (c *lmstfyClient) PeekJob(queue, jobID string) (*lmstfyClientJob, error) {
	job := &lmstfyClientJob{}
	found, err := c.call(http.MethodGet, path.Join(queue, "job", jobID), nil, nil, http.StatusOK, true, job)
	if !found || err != nil {
		return nil, err
	}
	return job, nil
}

func (c *lmstfyClient) PeekDeadLetter(queue string) (int, string, error) {
	var out struct {
		Size int    `json:"deadletter_size"`
		Head string `json:"deadletter_head"`
	}
	_, err := c.call(http.MethodGet, path.Join(queue, "deadletter"), nil, nil, http.StatusOK, false, &out)
	return out.Size, out.Head, err
}

func (c *lmstfyClient) RespawnDeadLetter(queue string, limit, ttl int64) (int, error) {
	q := url.Values{}
	q.Add("limit", strconv.FormatInt(limit, 10))
	q.Add("ttl", strconv.FormatInt(ttl, 10))
	var out struct {
		Count int `json:"count"`
	}
	_, err := c.call(http.MethodPut, path.Join(queue, "deadletter"), q, nil, http.StatusOK, false, &out)
	return out.Count, err
}

func (c *lmstfyClient) DeleteDeadLetter(queue string, limit int64) error {
	q := url.Values{}
	q.Add("limit", strconv.FormatInt(limit, 10))
	_, err := c.call(http.MethodDelete, path.Join(queue, "deadletter"), q, nil, http.StatusNoContent, false, nil)
	return err
}

func newLmstfyClient(t *testing.T) *lmstfyClient {
	t.Helper()
	e := newLmstfyEnv(t)
	u, err := url.Parse(e.ts.PublicURL)
	if err != nil {
		t.Fatal(err)
	}
	return &lmstfyClient{base: u, namespace: e.ns, token: e.token}
}

// TestLmstfyGoClient is lmstfy's client test suite (client/client_test.go) against Sluice, with
// its fixed sleeps replaced by polling.
func TestLmstfyGoClient(t *testing.T) {
	t.Parallel()
	cli := newLmstfyClient(t)
	// must and deadSoon take the subtest's t: a subtest that failed its parent's t would crash the
	// test binary instead of failing itself.
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	deadSoon := func(t *testing.T, queue string) {
		t.Helper()
		testwait.Until(t, time.Minute, "the job to reach the dead letter", func() bool {
			size, _, err := cli.PeekDeadLetter(queue)
			return err == nil && size == 1
		})
	}

	t.Run("Publish", func(t *testing.T) {
		t.Parallel()
		id, err := cli.Publish("test-publish", []byte("hello"), 0, 1, 0)
		if err != nil || id == "" {
			t.Fatalf("publish: %q %v", id, err)
		}
	})
	t.Run("RePublish", func(t *testing.T) {
		t.Parallel()
		id, err := cli.Publish("test-republish", []byte("hello"), 0, 1, 0)
		must(t, err)
		job, err := cli.Consume("test-republish", 5, 1)
		must(t, err)
		if job == nil || job.ID != id || string(job.Data) != "hello" {
			t.Fatalf("consumed %+v", job)
		}
		id, err = cli.RePublish(job, 10, 1, 0)
		if err != nil || id == "" {
			t.Fatalf("republish: %q %v", id, err)
		}
		job, err = cli.Consume("test-republish", 5, 1)
		must(t, err)
		if job == nil || job.ID != id || string(job.Data) != "hello" || job.TTL != 10 {
			t.Fatalf("consumed the republished %+v", job)
		}
	})
	t.Run("BatchPublish", func(t *testing.T) {
		t.Parallel()
		jobs := []any{"hello msg", 123456, struct {
			Msg string `json:"msg"`
		}{Msg: "success"}, []string{"foo", "bar"}, true}
		ids, err := cli.BatchPublish("test-batchpublish", jobs, 10, 1, 0)
		must(t, err)
		if len(ids) != len(jobs) {
			t.Fatalf("%d ids for %d jobs", len(ids), len(jobs))
		}
		index := map[string]int{}
		for i, id := range ids {
			index[id] = i
		}
		for range jobs {
			job, err := cli.Consume("test-batchpublish", 5, 1)
			must(t, err)
			i, ok := index[job.ID]
			want, _ := json.Marshal(jobs[i])
			if !ok || !bytes.Equal(job.Data, want) {
				t.Fatalf("consumed %+v, want data %s", job, want)
			}
		}
	})
	t.Run("Consume", func(t *testing.T) {
		t.Parallel()
		id, _ := cli.Publish("test-consume", []byte("hello"), 0, 1, 0)
		job, err := cli.Consume("test-consume", 10, 0)
		must(t, err)
		if job == nil || job.ID != id || string(job.Data) != "hello" {
			t.Fatalf("consumed %+v", job)
		}
	})
	t.Run("BatchConsume", func(t *testing.T) {
		t.Parallel()
		ids := map[string]bool{}
		for range 4 {
			id, err := cli.Publish("test-batchconsume", []byte("hello"), 0, 1, 0)
			must(t, err)
			ids[id] = true
		}
		queues := []string{"test-batchconsume"}
		for _, want := range []int{3, 1, 0} {
			jobs, err := cli.BatchConsume(queues, 3, 3, 1)
			must(t, err)
			if len(jobs) != want {
				t.Fatalf("got %d jobs, want %d", len(jobs), want)
			}
			for _, job := range jobs {
				if !ids[job.ID] || string(job.Data) != "hello" {
					t.Fatalf("consumed %+v", job)
				}
			}
		}
	})
	t.Run("Ack", func(t *testing.T) {
		t.Parallel()
		_, err := cli.Publish("test-ack", []byte("hello"), 0, 1, 0)
		must(t, err)
		job, err := cli.Consume("test-ack", 10, 0)
		must(t, err)
		must(t, cli.Ack("test-ack", job.ID))
		// lmstfy's own test acks on another queue name: that answers 204 as well.
		must(t, cli.Ack("test-finish", job.ID))
		if job, err := cli.Consume("test-ack", 10, 0); job != nil || err != nil {
			t.Fatalf("consume after ack: %+v %v", job, err)
		}
	})
	t.Run("ConsumeFromQueues", func(t *testing.T) {
		t.Parallel()
		_, err := cli.Publish("test-multi-consume1", []byte("hello1"), 0, 1, 0)
		must(t, err)
		id, err := cli.Publish("test-multi-consume2", []byte("hello2"), 0, 1, 0)
		must(t, err)
		job, err := cli.ConsumeFromQueues(10, 1, "test-multi-consume2", "test-multi-consume1")
		must(t, err)
		if job.Queue != "test-multi-consume2" || job.ID != id || string(job.Data) != "hello2" {
			t.Fatalf("consumed %+v", job)
		}
	})
	t.Run("QueueSize", func(t *testing.T) {
		t.Parallel()
		for range 2 {
			_, err := cli.Publish("test-queue-size", []byte("hello"), 0, 1, 0)
			must(t, err)
		}
		if size, err := cli.QueueSize("test-queue-size"); err != nil || size != 2 {
			t.Fatalf("size %d %v", size, err)
		}
	})
	t.Run("PeekQueue", func(t *testing.T) {
		t.Parallel()
		id, err := cli.Publish("test-peek-queue", []byte("hello1"), 0, 1, 0)
		must(t, err)
		_, err = cli.Publish("test-peek-queue", []byte("hello2"), 0, 1, 0)
		must(t, err)
		job, err := cli.PeekQueue("test-peek-queue")
		must(t, err)
		if job == nil || job.ID != id || string(job.Data) != "hello1" {
			t.Fatalf("peeked %+v", job)
		}
		if size, _ := cli.QueueSize("test-peek-queue"); size != 2 {
			t.Fatalf("size %d after peek", size)
		}
		if job, err := cli.PeekQueue("test-peek-empty"); job != nil || err != nil {
			t.Fatalf("peek of an empty queue: %+v %v", job, err)
		}
	})
	t.Run("PeekJob", func(t *testing.T) {
		t.Parallel()
		id, err := cli.Publish("test-peek-job", []byte("hello1"), 0, 1, 0)
		must(t, err)
		_, err = cli.Publish("test-peek-job", []byte("hello2"), 0, 1, 0)
		must(t, err)
		job, err := cli.PeekJob("test-peek-job", id)
		must(t, err)
		if job == nil || string(job.Data) != "hello1" {
			t.Fatalf("peeked %+v", job)
		}
	})
	t.Run("PeekDeadLetter", func(t *testing.T) {
		t.Parallel()
		id, _ := cli.Publish("test-peek-deadletter", []byte("hello1"), 0, 1, 0)
		_, err := cli.Consume("test-peek-deadletter", 1, 0)
		must(t, err)
		deadSoon(t, "test-peek-deadletter")
		size, head, err := cli.PeekDeadLetter("test-peek-deadletter")
		if err != nil || size != 1 || head != id {
			t.Fatalf("dead letter %d %q %v", size, head, err)
		}
	})
	t.Run("RespawnDeadLetter", func(t *testing.T) {
		t.Parallel()
		id, _ := cli.Publish("test-respawn-deadletter", []byte("hello1"), 0, 1, 0)
		_, err := cli.Consume("test-respawn-deadletter", 1, 0)
		must(t, err)
		deadSoon(t, "test-respawn-deadletter")
		count, err := cli.RespawnDeadLetter("test-respawn-deadletter", 2, 120)
		if err != nil || count != 1 {
			t.Fatalf("respawned %d %v", count, err)
		}
		job, err := cli.Consume("test-respawn-deadletter", 1, 0)
		must(t, err)
		if job == nil || string(job.Data) != "hello1" || job.ID != id {
			t.Fatalf("consumed %+v", job)
		}
	})
	t.Run("DeleteDeadLetter", func(t *testing.T) {
		t.Parallel()
		id, _ := cli.Publish("test-delete-deadletter", []byte("hello1"), 0, 1, 0)
		_, err := cli.Consume("test-delete-deadletter", 1, 0)
		must(t, err)
		deadSoon(t, "test-delete-deadletter")
		must(t, cli.DeleteDeadLetter("test-delete-deadletter", 2))
		job, err := cli.PeekJob("test-delete-deadletter", id)
		if err != nil || job != nil {
			t.Fatalf("peek of a deleted dead job: %+v %v", job, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		_, err := cli.Publish("test-errors", []byte("x"), 0, 0, 0)
		if err == nil || err.Error() != "[400]tries shouldn't be zero" {
			t.Fatalf("publish with tries 0: %v", err)
		}
		bad := *cli
		bad.token = "sk_wrong"
		if _, err := bad.Publish("test-errors", []byte("x"), 0, 1, 0); err == nil || err.Error() != "[401]invalid token" {
			t.Fatalf("publish with a wrong token: %v", err)
		}
	})
}
