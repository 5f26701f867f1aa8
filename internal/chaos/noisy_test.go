//go:build chaos

package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// TestNoisyTenant runs a canary namespace publishing and consuming about 20 jobs a second
// through a `sluice server` for SLUICE_CHAOS_SECONDS while a noisy namespace floods the same
// server and Redis from 8 clients: 32 KB payloads, a new queue per publish until its quota of
// queues (300) refuses more, then the queues it has, under a token rate limit of 50 publishes a
// second. The canary must lose nothing and see no failed publish; its latencies are reported
// (publish to consume counts from the publish to the first delivery that reached the consumer).
func TestNoisyTenant(t *testing.T) {
	bin := buildSluice(t)
	srv := redistest.StartServer(t, "appendfsync everysec")
	in := startInstance(t, bin, srv.URL(), "--namespace-max-queues", "300")
	canary := tokenOf(t, in, "canary")
	noisy := tokenOf(t, in, "noisy")
	id := noisyTokenID(t, in)
	in.admin(t, http.MethodPut, "/v1/namespaces/noisy/tokens/"+id+"/limit", `{"write": 50, "interval": 1}`)

	hc := &http.Client{Timeout: 10 * time.Second}
	done := make(chan struct{})
	var wg sync.WaitGroup
	c := &canaryRun{published: map[string]time.Time{}, consumed: map[string]bool{}}
	wg.Go(func() { c.publish(hc, in.publicURL(), canary, done) })
	consumeDone := make(chan struct{})
	var cwg sync.WaitGroup
	cwg.Go(func() { c.consume(hc, in.publicURL(), canary, consumeDone) })
	var n noisyRun
	for w := range 8 {
		wg.Go(func() { n.flood(hc, in.publicURL(), noisy, w, done) })
	}
	time.Sleep(loadDuration())
	close(done)
	wg.Wait()
	// A consume answer lost on the way (a client timeout) leaves its jobs leased: they come back
	// when the lease (ttr 5s) ends.
	deadline := time.Now().Add(time.Minute)
	for c.pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	close(consumeDone)
	cwg.Wait()

	lost := c.pending()
	pub, e2e := percentiles(c.publishLatency), percentiles(c.endToEnd)
	t.Logf("chaos noisy: canary published %d (failed %d), consumed %d, lost %d; publish p50 %s p99 %s max %s; "+
		"publish to consume p50 %s p99 %s max %s; noisy publishes 201 %d, 429 quota_exceeded %d, 429 rate_limited %d, other %d",
		len(c.published), c.failed.Load(), len(c.consumed), lost, pub[0], pub[1], pub[2], e2e[0], e2e[1], e2e[2],
		n.created.Load(), n.quota.Load(), n.limited.Load(), n.other.Load())
	if lost > 0 || c.failed.Load() > 0 {
		t.Errorf("the canary lost %d jobs and saw %d failed publishes", lost, c.failed.Load())
	}
	if n.quota.Load() == 0 {
		t.Errorf("the noisy namespace never met its quota of queues")
	}
}

// tokenOf makes a token of namespace ns with every permission.
func tokenOf(t *testing.T, in *instance, ns string) string {
	t.Helper()
	tok := in.admin(t, http.MethodPost, "/v1/namespaces/"+ns+"/tokens", `{"description": "chaos"}`)
	s, _ := tok["token"].(string)
	if s == "" {
		t.Fatalf("no token in %v", tok)
	}
	return s
}

// noisyTokenID is the id of the noisy namespace's token.
func noisyTokenID(t *testing.T, in *instance) string {
	t.Helper()
	list, _ := in.admin(t, http.MethodGet, "/v1/namespaces/noisy/tokens", "")["tokens"].([]any)
	if len(list) != 1 {
		t.Fatalf("noisy tokens: %v", list)
	}
	return list[0].(map[string]any)["id"].(string)
}

// canaryRun is the canary's record: when each job was published, which were consumed, and the
// latencies seen.
type canaryRun struct {
	mu             sync.Mutex
	published      map[string]time.Time
	consumed       map[string]bool
	publishLatency []time.Duration
	endToEnd       []time.Duration
	failed         atomic.Int64
}

// pending counts the jobs published (201) that no consume has returned yet.
func (c *canaryRun) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id := range c.published {
		if !c.consumed[id] {
			n++
		}
	}
	return n
}

// publish publishes a job every 50 ms until done.
func (c *canaryRun) publish(hc *http.Client, base, token string, done <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		id := "c-" + strconv.Itoa(i)
		start := time.Now()
		status, _ := call(hc, base+"/v1/ns/canary/queues/canary/jobs", token, `{"payload": {"id": "`+id+`"}}`)
		c.mu.Lock()
		if status == http.StatusCreated {
			c.published[id] = start
			c.publishLatency = append(c.publishLatency, time.Since(start))
		} else {
			c.failed.Add(1)
		}
		c.mu.Unlock()
	}
}

// consume consumes and acks the canary's jobs until done.
func (c *canaryRun) consume(hc *http.Client, base, token string, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		status, body := call(hc, base+"/v1/ns/canary/consume", token, `{"queues": ["canary"], "count": 10, "timeout": 1, "ttr": 5}`)
		if status != http.StatusOK {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var got struct {
			Jobs []struct {
				JobID    string `json:"job_id"`
				Delivery int    `json:"delivery"`
				Payload  struct {
					ID string `json:"id"`
				} `json:"payload"`
			} `json:"jobs"`
		}
		_ = json.Unmarshal(body, &got)
		for _, j := range got.Jobs {
			call(hc, base+"/v1/ns/canary/queues/canary/jobs/"+j.JobID+"/ack", token, `{"delivery": `+strconv.Itoa(j.Delivery)+`}`)
			c.mu.Lock()
			// A job may come back before its publish's answer was read: it counts as consumed
			// all the same, without a latency.
			if !c.consumed[j.Payload.ID] {
				c.consumed[j.Payload.ID] = true
				if at, ok := c.published[j.Payload.ID]; ok {
					c.endToEnd = append(c.endToEnd, time.Since(at))
				}
			}
			c.mu.Unlock()
		}
	}
}

// noisyRun counts the noisy namespace's answers.
type noisyRun struct{ created, quota, limited, other atomic.Int64 }

// flood publishes 32 KB jobs as fast as answers come: each to a new queue while the quota lets
// it, else to one of the queues it has.
func (n *noisyRun) flood(hc *http.Client, base, token string, w int, done <-chan struct{}) {
	payload := `{"payload": "` + strings.Repeat("n", 32<<10) + `"}`
	full := false
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		q := fmt.Sprintf("w%d-%d", w, i)
		if full {
			q = fmt.Sprintf("w%d-%d", w, rand.IntN(30))
		}
		status, body := call(hc, base+"/v1/ns/noisy/queues/"+q+"/jobs", token, payload)
		switch {
		case status == http.StatusCreated:
			n.created.Add(1)
		case status == http.StatusTooManyRequests && bytes.Contains(body, []byte("quota_exceeded")):
			n.quota.Add(1)
			full = true
		case status == http.StatusTooManyRequests:
			n.limited.Add(1)
		default:
			n.other.Add(1)
		}
	}
}

// call POSTs a JSON body with a bearer token and returns the status and body (0 on a transport
// error).
func call(hc *http.Client, url, token, body string) (int, []byte) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// percentiles returns p50, p99 and the maximum of ds.
func percentiles(ds []time.Duration) [3]time.Duration {
	if len(ds) == 0 {
		return [3]time.Duration{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(100 * time.Microsecond)
	}
	return [3]time.Duration{at(0.50), at(0.99), s[len(s)-1].Round(100 * time.Microsecond)}
}
