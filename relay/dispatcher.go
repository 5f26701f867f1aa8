package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/notify"
	"github.com/sluicehq/sluice/internal/outbound"
)

// DispatcherConfig configures a Dispatcher. The zero value is usable.
type DispatcherConfig struct {
	// Workers is the most offline calls this Dispatcher makes at once (over all endpoints; each
	// endpoint's Concurrency still holds across all dispatchers). Default 64.
	Workers int
	// Batch is the most tasks one dispatch script call starts. Default 64.
	Batch int
	// Endpoints limits the Dispatcher to these endpoints. Default: every endpoint.
	Endpoints []string
	// AllowPrivate lets calls reach loopback and private addresses (endpoints on the same host or
	// private network). Default false: such calls are refused, and fail for good.
	AllowPrivate bool
	// MaxResponseBytes bounds the result body kept from a call (the rest is dropped and the task's
	// ResultTruncated set). Default 1 MiB.
	MaxResponseBytes int64
	// Breaker configures the circuit breaker of each endpoint (in this process): after repeated
	// retryable failures dispatch to the endpoint pauses, then one probe task goes.
	Breaker BreakerConfig
	// ResultHeaders are the response headers kept with a task's result. Default Content-Type.
	ResultHeaders []string
	// PollInterval is the longest the Dispatcher sleeps without asking Redis, which bounds the
	// delay if a wake-up notification is lost. Default 1s.
	PollInterval time.Duration
	// MaintainInterval is the time between maintenance passes (Client.MaintainOnce: expired
	// leases and permits, queue timeouts, archive). Negative: none. Default 500ms.
	MaintainInterval time.Duration
	// OnCall, when set, is called after every offline call (for metrics). It must be quick.
	OnCall func(CallEvent)
	// Logger receives the Dispatcher's logs. Default: the Client's.
	Logger *slog.Logger
}

// CallEvent describes one offline call.
type CallEvent struct {
	Endpoint   string
	TaskID     string
	Attempt    int
	Outcome    CallOutcome
	HTTPStatus int
	Duration   time.Duration
	Err        error
}

// DispatcherStats counts what a Dispatcher did since Start.
type DispatcherStats struct {
	Taken     int64 // offline tasks started
	Succeeded int64 // calls answered 2xx
	Retried   int64 // calls to be tried again
	Failed    int64 // calls failed for good (4xx, refused, no tries left)
	Discarded int64 // results dropped: the task was cancelled or its lease had ended
	Held      int64 // dispatch rounds skipped because an endpoint's breaker was open
	Late      int64 // rate-limited calls that started late enough to hold back the second after them
	InFlight  int64 // calls under way now
}

// Dispatcher runs the offline tasks of a Client's endpoints and permits their online tasks. Any
// number of Dispatchers in any number of processes share the work: each dispatch is one script
// that takes a QPS token, a concurrency slot and the next task together, so the endpoint limits
// hold across all of them. A call in flight is leased: when a dispatcher dies mid-call, the lease
// ends and maintenance retries the task (at-least-once).
type Dispatcher struct {
	c   *Client
	cfg DispatcherConfig
	log *slog.Logger

	mu       sync.Mutex
	started  bool
	stopping chan struct{}
	done     chan struct{}
	cancel   context.CancelFunc

	sender   *outbound.Sender // made by Start, closed when the Dispatcher stops
	breakers *outbound.Breakers
	clock    redisClock
	keep     map[string]bool // canonical result header names

	inflight atomic.Int64
	freed    chan struct{}
	woken    chan struct{}
	wakeMu   sync.Mutex
	wakes    map[string]bool

	stats struct{ taken, ok, retried, failed, discarded, held, late atomic.Int64 }
}

// NewDispatcher returns a stopped Dispatcher for c's endpoints.
func NewDispatcher(c *Client, cfg DispatcherConfig) (*Dispatcher, error) {
	cfg.Workers = cmp.Or(cfg.Workers, 64)
	cfg.Batch = cmp.Or(cfg.Batch, 64)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, time.Second)
	cfg.MaintainInterval = cmp.Or(cfg.MaintainInterval, 500*time.Millisecond)
	if cfg.ResultHeaders == nil {
		cfg.ResultHeaders = []string{"Content-Type"}
	}
	switch {
	case cfg.Workers < 0:
		return nil, errors.New("relay dispatcher config: Workers must be positive")
	case cfg.Batch < 0:
		return nil, errors.New("relay dispatcher config: Batch must be positive")
	case cfg.PollInterval < time.Millisecond:
		return nil, errors.New("relay dispatcher config: PollInterval must be at least 1ms")
	}
	if err := cfg.Breaker.engine().Validate(); err != nil {
		return nil, fmt.Errorf("relay dispatcher config: Breaker: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = c.cfg.Logger
	}
	keep := make(map[string]bool, len(cfg.ResultHeaders))
	for _, h := range cfg.ResultHeaders {
		keep[http.CanonicalHeaderKey(h)] = true
	}
	return &Dispatcher{c: c, cfg: cfg, log: cfg.Logger, keep: keep}, nil
}

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
// one-second window at the endpoint. Lateness up to the margin is absorbed by it; a call later
// than that holds back the next second's calls by as much (late.lua). It costs 0.8% of the rate;
// a smaller margin (4 ms was tried) made a loaded machine report twice as many late calls, each
// of which costs the rate its lateness.
const rateMargin = 8 * time.Millisecond

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

// lateCall is a rate-limited call that started later than rateMargin after its token's time.
type lateCall struct {
	endpoint string
	id       string
	late     time.Duration
}

// callResult is a call's outcome, waiting to be stored.
type callResult struct {
	endpoint string
	args     []any // the 10 finish.lua fields
}

// Start runs the Dispatcher until Stop (graceful: calls under way finish and are stored) or
// until ctx ends (abrupt: calls under way are abandoned unreported, as if the process died;
// their leases expire and the tasks are retried).
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("relay: dispatcher already started")
	}
	s, err := outbound.New(outbound.Config{AllowPrivate: d.cfg.AllowPrivate, MaxResponseBytes: d.cfg.MaxResponseBytes, Logger: d.log})
	if err != nil {
		return fmt.Errorf("relay: dispatcher sender: %w", err)
	}
	d.sender = s
	d.breakers = outbound.NewBreakers(d.cfg.Breaker.engine())
	d.freed = make(chan struct{}, 1)
	d.woken = make(chan struct{}, 1)
	d.wakes = make(map[string]bool)
	w, err := d.c.watch(ctx, d.onWake, d.c.ch.wake)
	if err != nil {
		d.sender.Close()
		return fmt.Errorf("relay: dispatcher subscribe: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	d.started, d.cancel = true, cancel
	d.stopping, d.done = make(chan struct{}), make(chan struct{})
	jobs := make(chan dispatchJob, d.cfg.Workers)
	results := make(chan callResult, d.cfg.Workers)
	late := make(chan lateCall, d.cfg.Workers)

	var workers, finishers sync.WaitGroup
	for range d.cfg.Workers {
		workers.Go(func() { d.work(runCtx, jobs, results, late) })
	}
	for range 2 {
		finishers.Go(func() { d.finish(runCtx, results) })
	}
	var reporter sync.WaitGroup
	reporter.Go(func() { d.reportLate(runCtx, late) })
	var maint sync.WaitGroup
	if d.cfg.MaintainInterval > 0 {
		maint.Go(func() { d.maintain(runCtx) })
	}
	go func() {
		defer close(d.done)
		d.loop(runCtx, w, jobs)
		w.Stop()
		close(jobs)
		workers.Wait()
		close(results)
		close(late)
		finishers.Wait()
		reporter.Wait()
		cancel()
		maint.Wait()
		d.sender.Close()
	}()
	return nil
}

// Stop stops taking tasks, waits for the calls under way and stores their results, then
// returns. A Dispatcher can be started again after Stop.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	if !d.started {
		d.mu.Unlock()
		return
	}
	done := d.done
	select {
	case <-d.stopping: // another Stop is under way: it finishes up, this one waits for the end
		d.mu.Unlock()
		<-done
		return
	default:
		close(d.stopping)
	}
	d.mu.Unlock()
	<-done
	d.mu.Lock()
	d.started = false
	d.cancel()
	d.mu.Unlock()
}

// Stats returns the Dispatcher's counters.
func (d *Dispatcher) Stats() DispatcherStats {
	return DispatcherStats{
		Taken: d.stats.taken.Load(), Succeeded: d.stats.ok.Load(), Retried: d.stats.retried.Load(),
		Failed: d.stats.failed.Load(), Discarded: d.stats.discarded.Load(), Held: d.stats.held.Load(),
		Late: d.stats.late.Load(), InFlight: d.inflight.Load(),
	}
}

// Breaker returns the state of an endpoint's breaker in this Dispatcher.
func (d *Dispatcher) Breaker(endpoint string) BreakerStatus {
	d.mu.Lock()
	bs := d.breakers
	d.mu.Unlock()
	if bs == nil {
		return BreakerStatus{}
	}
	return breakerStatus(bs.Get(endpoint).Status())
}

func (d *Dispatcher) onWake(endpoint string) {
	d.wakeMu.Lock()
	d.wakes[endpoint] = true
	d.wakeMu.Unlock()
}

func (d *Dispatcher) takeWakes() map[string]bool {
	d.wakeMu.Lock()
	defer d.wakeMu.Unlock()
	if len(d.wakes) == 0 {
		return nil
	}
	w := d.wakes
	d.wakes = make(map[string]bool)
	return w
}

// loop decides when to ask Redis for each endpoint's next tasks: at once after a full batch, at
// the time the rate limit or a retry names, on a wake-up (a task submitted to an empty queue, a
// slot freed), when a worker frees up, and at least every PollInterval.
func (d *Dispatcher) loop(ctx context.Context, w *notify.Waiter, jobs chan<- dispatchJob) {
	due := make(map[string]time.Time)
	needWorkers := make(map[string]bool) // endpoints whose next task waits for a free worker
	var version int64                    // of the endpoint settings last seen
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.stopping:
			return
		default:
		}
		snap, err := d.c.endpoints(ctx)
		if err != nil {
			d.log.Warn("relay: dispatcher: read endpoints", slog.Any("error", err))
		}
		now := time.Now()
		next := now.Add(d.cfg.PollInterval)
		// Wake at least as often as settings are refreshed, so a change applies within it.
		wakeBy := now.Add(d.c.cfg.RefreshInterval)
		waitWorkers := false
		woken := d.takeWakes()
		var eps []Endpoint
		if snap != nil {
			eps = snap.list
			if snap.version != version {
				// New settings (a higher concurrency or rate) may let tasks start now.
				version = snap.version
				clear(due)
			}
		}
		seen := make(map[string]bool, len(eps))
		for _, e := range eps {
			if len(d.cfg.Endpoints) > 0 && !slices.Contains(d.cfg.Endpoints, e.Name) {
				continue
			}
			seen[e.Name] = true
			at, ok := due[e.Name]
			if !ok || woken[e.Name] {
				at = now
			}
			if at.After(now) {
				next = minTime(next, at)
				due[e.Name] = at
				continue
			}
			// An endpoint whose next task needs a worker waits for a few to be free rather than
			// take a handful of tasks per script call: under load that keeps batches large. Other
			// endpoints go on: their online tasks need no worker.
			free := int64(d.cfg.Workers) - d.inflight.Load()
			if needWorkers[e.Name] && free < d.minTake() {
				waitWorkers = true
				due[e.Name] = now
				continue
			}
			var blocked bool
			// Ask for no more tasks than there are workers (those popped beyond it that are offline
			// would go back), but for some even with none free: online tasks need no worker.
			n := min(int64(d.cfg.Batch), max(free, d.minTake()))
			at, blocked = d.dispatch(ctx, e, int(n), int(max(free, 0)), jobs, now)
			if blocked {
				needWorkers[e.Name] = true
				waitWorkers = true
			} else {
				delete(needWorkers, e.Name)
			}
			due[e.Name] = at
			next = minTime(next, at)
		}
		for name := range due {
			if !seen[name] {
				delete(due, name)
				delete(needWorkers, name)
			}
		}
		if !next.After(time.Now()) {
			continue
		}
		timer.Reset(time.Until(minTime(next, wakeBy)))
		var freed <-chan struct{}
		if waitWorkers {
			freed = d.freed
		}
		select {
		case <-ctx.Done():
			return
		case <-d.stopping:
			return
		case <-w.C:
		case <-freed:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// minTake is the fewest free workers worth a dispatch call: a quarter of a batch.
func (d *Dispatcher) minTake() int64 {
	return max(1, int64(min(d.cfg.Batch, d.cfg.Workers))/4)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// dispatch takes up to n tasks of e, at most free of them offline, and hands the offline ones to
// the workers; it returns when to ask again, and whether the next task waits for a worker.
func (d *Dispatcher) dispatch(ctx context.Context, e Endpoint, n, free int, jobs chan<- dispatchJob, now time.Time) (time.Time, bool) {
	br := d.breakers.Get(e.Name)
	if st := br.Status(); st.State != outbound.Closed {
		if st.State == outbound.Open && now.Before(st.OpenUntil) {
			d.stats.held.Add(1)
			return st.OpenUntil, false
		}
		// A probe: only when a task waits, so the probe slot is not spent on an empty queue.
		queued, err := d.c.rdb.ZCard(ctx, d.c.keys.get(e.Name).all[0]).Result()
		if err != nil || queued == 0 {
			return now.Add(min(d.cfg.PollInterval, 100*time.Millisecond)), false
		}
		if free == 0 {
			return now, true
		}
		if !br.Allow() {
			d.stats.held.Add(1)
			return now.Add(100 * time.Millisecond), false
		}
		n, free = 1, 1
	}
	hint, taken, err := d.c.take(ctx, e, n, free, &d.clock)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("relay: dispatch", slog.String("endpoint", e.Name), slog.Any("error", err))
		}
		return now.Add(d.cfg.PollInterval), false
	}
	for _, j := range taken {
		d.inflight.Add(1)
		d.stats.taken.Add(1)
		jobs <- j
	}
	switch {
	case hint == -2:
		return now, true
	case hint == 0:
		return now, false
	case hint > 0:
		return now.Add(time.Duration(hint) * time.Millisecond), false
	default:
		return now.Add(d.cfg.PollInterval), false
	}
}

// take runs take.lua for e (at most n tasks, maxOffline of them offline) and decodes its offline
// tasks, placing their start times on this process's clock with clock.
func (c *Client) take(ctx context.Context, e Endpoint, n, maxOffline int, clock *redisClock) (int64, []dispatchJob, error) {
	lease := e.Timeout + c.cfg.LeaseMargin
	sent := time.Now()
	raw, err := c.run(ctx, scriptTake, e.Name, n, e.Concurrency, spacedQPS(e), e.burst(), ms(lease), ms(e.PermitTTL),
		rateLookahead.Milliseconds(), maxOffline).Slice()
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

// work makes calls until jobs is closed. After an abrupt stop (ctx ended) nothing is reported.
func (d *Dispatcher) work(ctx context.Context, jobs <-chan dispatchJob, results chan<- callResult, late chan<- lateCall) {
	for j := range jobs {
		if wait := time.Until(j.due); j.delay > 0 && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			d.release()
			continue
		}
		callCtx := ctx
		if j.endpoint.QPS > 0 {
			callCtx = d.watchLate(ctx, j, late)
		}
		resp, err := d.sender.Do(callCtx, j.req)
		d.release()
		if ctx.Err() != nil {
			continue // abandoned: the lease will expire
		}
		outcome, retryAfter := outbound.Classify(resp, err)
		d.breakers.Get(j.endpoint.Name).Record(outcome != outbound.Retry)
		code, delay := "ok", time.Duration(0)
		switch outcome {
		case outbound.Success:
			d.stats.ok.Add(1)
		case outbound.Retry:
			if j.attempt < j.tries {
				code = "retry"
				delay = max(outbound.Backoff(j.attempt, j.endpoint.RetryBackoff, j.endpoint.MaxRetryBackoff), retryAfter)
				d.stats.retried.Add(1)
			} else {
				code = "fail"
				d.stats.failed.Add(1)
			}
		default:
			code = "fail"
			d.stats.failed.Add(1)
		}
		errText := ""
		if err != nil {
			errText = err.Error()
		} else if outcome != outbound.Success {
			errText = fmt.Sprintf("HTTP %d", resp.Status)
		}
		if d.cfg.OnCall != nil {
			d.cfg.OnCall(CallEvent{Endpoint: j.endpoint.Name, TaskID: j.id, Attempt: j.attempt, Outcome: callOutcome(outcome),
				HTTPStatus: resp.Status, Duration: resp.Duration, Err: err})
		}
		truncated := 0
		if resp.Truncated {
			truncated = 1
		}
		results <- callResult{endpoint: j.endpoint.Name, args: []any{
			j.id, j.attempt, code, resp.Status, d.keptHeaders(resp.Header), resp.Body, truncated, errText,
			delay.Milliseconds(), resp.Duration.Milliseconds(),
		}}
	}
}

// watchLate returns ctx with a trace that measures how late j's call starts: when it has its
// connection (after a dial, if one was needed), just before the request is written. A call
// later than rateMargin is reported before the call returns, so its hold reaches Redis while
// it still matters (within the second after the call).
func (d *Dispatcher) watchLate(ctx context.Context, j dispatchJob, late chan<- lateCall) context.Context {
	var once sync.Once
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) {
			once.Do(func() {
				if l := time.Since(j.token); l > rateMargin {
					d.stats.late.Add(1)
					late <- lateCall{endpoint: j.endpoint.Name, id: j.id, late: l}
				}
			})
		},
	})
}

func (d *Dispatcher) release() {
	d.inflight.Add(-1)
	select {
	case d.freed <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) keptHeaders(h http.Header) string {
	kept := make(http.Header)
	for k, v := range h {
		if d.keep[k] {
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(kept)
	return string(b)
}

// maxFinishBatch bounds the outcomes stored by one finish script call.
const maxFinishBatch = 256

// finish stores results, batching those that are ready together: one script call per endpoint.
func (d *Dispatcher) finish(ctx context.Context, results <-chan callResult) {
	batch := make(map[string][]any)
	for r := range results {
		batch[r.endpoint] = append(batch[r.endpoint], r.args...)
		count := 1
	drain:
		for count < maxFinishBatch {
			select {
			case r2, ok := <-results:
				if !ok {
					break drain
				}
				batch[r2.endpoint] = append(batch[r2.endpoint], r2.args...)
				count++
			default:
				break drain
			}
		}
		for ep, args := range batch {
			d.store(ctx, ep, args)
			delete(batch, ep)
		}
	}
}

// store runs finish.lua for one endpoint's outcomes, trying again briefly when Redis fails; a
// result that cannot be stored is lost, and the lease's end retries its task.
func (d *Dispatcher) store(ctx context.Context, endpoint string, args []any) {
	argv := append([]any{len(args) / 10}, args...)
	var err error
	for attempt := range 3 {
		var codes []int64
		codes, err = d.c.run(ctx, scriptFinish, endpoint, argv...).Int64Slice()
		if err == nil {
			for _, c := range codes {
				if c != 1 {
					d.stats.discarded.Add(1)
				}
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
	d.log.Warn("relay: store call results", slog.String("endpoint", endpoint), slog.Int("results", len(args)/10), slog.Any("error", err))
}

// reportLate tells Redis about late calls (late.lua), batching those that are ready together:
// one script call per endpoint. A report must arrive within the second after the call to hold
// anything back, so it never waits behind call results.
func (d *Dispatcher) reportLate(ctx context.Context, late <-chan lateCall) {
	batch := make(map[string][]any)
	for l := range late {
		batch[l.endpoint] = append(batch[l.endpoint], l.id, float64(l.late.Microseconds())/1000)
		count := 1
	drain:
		for ; count < maxFinishBatch; count++ {
			select {
			case l2, ok := <-late:
				if !ok {
					break drain
				}
				batch[l2.endpoint] = append(batch[l2.endpoint], l2.id, float64(l2.late.Microseconds())/1000)
			default:
				break drain
			}
		}
		for ep, args := range batch {
			if err := d.c.run(ctx, scriptLate, ep, append([]any{len(args) / 2}, args...)...).Err(); err != nil && ctx.Err() == nil {
				d.log.Warn("relay: report late calls", slog.String("endpoint", ep), slog.Any("error", err))
			}
			delete(batch, ep)
		}
	}
}

// maintain runs Client.MaintainOnce every MaintainInterval until ctx ends.
func (d *Dispatcher) maintain(ctx context.Context) {
	t := time.NewTicker(d.cfg.MaintainInterval)
	defer t.Stop()
	for {
		if _, err := d.c.MaintainOnce(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("relay: maintenance pass", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
