package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

// dispatchJob is an offline task taken for a call.
type dispatchJob struct {
	endpoint Endpoint
	id       string
	attempt  int
	tries    int
	delay    time.Duration // wait before the call: its rate-limit token is due then
	// token is the token's time on this process's clock, estimated no later than it is
	// (redisClock): the call's lateness is measured against it.
	token time.Time
	// due is when the call starts: delay after the script's answer came back (so never before
	// the token's time, whatever the estimate), or at token when that is later.
	due time.Time
	req outbound.Request
}

// rateLookahead is how far ahead a dispatch takes rate-limit tokens. A dispatcher that comes
// back a little late (a busy machine, a slow round trip) then still starts every call at its
// token's time, so the rate holds exactly instead of losing the time it was late.
const rateLookahead = 50 * time.Millisecond

// rateMargin keeps the calls of a rate-limited endpoint a little further apart than 1/QPS: QPS
// calls span one second plus rateMargin on Redis's clock. A call starts after its token's time
// (the answer's round trip, timers, the machine's scheduling), and with calls spaced exactly a
// call only slightly later than the one a second before it would put QPS + 1 calls into a
// one-second window at the endpoint. It costs 0.8% of the rate.
const rateMargin = 8 * time.Millisecond

// lateAfter is the lateness past which a call is reported (late.lua) and counts in the start log
// from its real start rather than its token's time: half the margin, so that the start log's
// check (logSpan) can allow for the calls that were late by less and still never move a token of
// calls spaced as rateMargin spaces them.
const lateAfter = rateMargin / 2

// logSpan is the span of the start log's check (lib.lua rate_tokens): a token starts only when
// fewer than the endpoint's window of calls are logged in the logSpan before it. One second,
// plus lateAfter for the unreported lateness of the calls in it, plus 1 ms for what a call's
// arrival may add to the moment its lateness is measured; less than a second plus rateMargin,
// so calls on time never move a token.
const logSpan = time.Second + lateAfter + time.Millisecond

// spacedQPS is the rate at which take.lua spaces e's calls: QPS calls per second plus rateMargin.
func spacedQPS(e Endpoint) float64 {
	return e.QPS * float64(time.Second) / float64(time.Second+rateMargin)
}

// redisClock estimates how far this process's clock is ahead of Redis's, from below: Redis ran
// a take script after it was sent, so sent − (Redis's time in the script) is at most the offset.
// The best (highest) bound of the last one to two clockWindows is used, so that neither a slow
// round trip nor a drifting clock shows as lateness.
type redisClock struct {
	mu        sync.Mutex
	cur, prev time.Duration
	since     time.Time
	have      bool
}

const clockWindow = 10 * time.Second

// observe adds the bound from a script sent at sent that saw Redis's time redisUs, and returns
// the estimate.
func (c *redisClock) observe(sent time.Time, redisUs int64) time.Duration {
	b := sent.Sub(time.UnixMicro(redisUs))
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.have:
		c.cur, c.prev, c.since, c.have = b, b, sent, true
	case sent.Sub(c.since) >= clockWindow:
		c.prev, c.cur, c.since = c.cur, b, sent
	default:
		c.cur = max(c.cur, b)
	}
	return max(c.cur, c.prev)
}

// take runs take.lua for e (at most n tasks, maxOffline of them offline) and decodes its offline
// tasks, placing their start times on this process's clock with clock.
func (c *Client) take(ctx context.Context, e Endpoint, n, maxOffline int, clock *redisClock) (int64, []dispatchJob, error) {
	lease := e.Timeout + c.cfg.LeaseMargin
	sent := time.Now()
	raw, err := c.run(ctx, scriptTake, e.Name, n, e.Concurrency, spacedQPS(e), e.burst(), ms(lease), ms(e.PermitTTL),
		rateLookahead.Milliseconds(), maxOffline, e.window(), logSpan.Milliseconds()).Slice()
	if err != nil {
		return 0, nil, err
	}
	answered := time.Now()
	hint := raw[0].(int64)
	count := int(raw[1].(int64))
	jobs := make([]dispatchJob, 0, count)
	var nowMs time.Time
	var offset time.Duration
	if count > 0 {
		redisUs, _ := raw[2].(int64)
		offset = clock.observe(sent, redisUs)
		nowMs = time.UnixMilli(redisUs / 1000)
	}
	for i := range count {
		f := raw[3+i*8 : 11+i*8]
		s := func(k int) string { v, _ := f[k].(string); return v }
		num := func(k int) int {
			switch v := f[k].(type) {
			case int64:
				return int(v)
			case string:
				var x int
				_, _ = fmt.Sscan(v, &x)
				return x
			}
			return 0
		}
		var h http.Header
		if hs := s(5); hs != "" && hs != "{}" {
			_ = json.Unmarshal([]byte(hs), &h)
		}
		var body []byte
		if b := s(6); b != "" {
			body = []byte(b)
		}
		delay := time.Duration(num(7)) * time.Microsecond
		jobs = append(jobs, dispatchJob{
			endpoint: e, id: s(0), attempt: num(1), tries: num(2), delay: delay,
			token: nowMs.Add(delay + offset), due: latest(answered.Add(delay), nowMs.Add(delay+offset)),
			req: outbound.Request{Method: s(3), URL: s(4), Header: h, Body: body, Timeout: e.Timeout},
		})
	}
	return hint, jobs, nil
}
