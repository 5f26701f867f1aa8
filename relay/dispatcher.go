package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/notify"
	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/startstop"
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
	// PollInterval is the longest the Dispatcher sleeps before looking at its endpoints again
	// (without asking Redis for an endpoint that has nothing to take: see WakeupInterval), and
	// how long it waits after a failed call to Redis. Default 1s.
	PollInterval time.Duration
	// WakeupInterval is the longest an endpoint with nothing to take (an empty queue, or every
	// slot held) waits before the Dispatcher asks Redis again; each wait is drawn between three
	// quarters of it and all of it. Endpoints are woken by notifications (a task submitted, a
	// slot freed, the subscription coming back after a lost connection), so this is only a last
	// resort, and idle endpoints cost Redis next to nothing: 10,000 of them are asked about 300
	// times a second at the default. Default 40s.
	WakeupInterval time.Duration
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
	Late      int64 // rate-limited calls that started later than the spacing's margin (reported to the start log)
	InFlight  int64 // calls under way now
}

// Dispatcher runs the offline tasks of a Client's endpoints and permits their online tasks. Any
// number of Dispatchers in any number of processes share the work: each dispatch is one script
// that takes a QPS token, a concurrency slot and the next task together, so the endpoint limits
// hold across all of them. A call in flight is leased: when a dispatcher dies mid-call, the lease
// ends and maintenance retries the task (at-least-once).
type Dispatcher struct {
	startstop.Base // the run's lifecycle: Start sets the run up, then Base.Run runs it

	c   *Client
	cfg DispatcherConfig
	log *slog.Logger

	startMu sync.Mutex // one Start at a time, so a run's state is set up by one caller
	mu      sync.Mutex // guards breakers, which Breaker reads while a Start replaces them

	sender   *outbound.Sender // made by Start, closed when the run ends
	breakers *outbound.Breakers
	clock    redisClock
	keep     map[string]bool // canonical result header names

	inflight atomic.Int64
	freed    chan struct{}
	wakeMu   sync.Mutex
	wakes    map[string]bool

	stats struct{ taken, ok, retried, failed, discarded, held, late atomic.Int64 }
}

var _ startstop.Service = (*Dispatcher)(nil)

// NewDispatcher returns a stopped Dispatcher for c's endpoints.
func NewDispatcher(c *Client, cfg DispatcherConfig) (*Dispatcher, error) {
	cfg.Workers = cmp.Or(cfg.Workers, 64)
	cfg.Batch = cmp.Or(cfg.Batch, 64)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, time.Second)
	cfg.WakeupInterval = cmp.Or(cfg.WakeupInterval, 40*time.Second)
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
	case cfg.WakeupInterval < time.Millisecond:
		return nil, errors.New("relay dispatcher config: WakeupInterval must be at least 1ms")
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

// Start runs the Dispatcher until Stop (graceful: calls under way finish and are stored) or
// until ctx ends (abrupt: calls under way are abandoned unreported, as if the process died;
// their leases expire and the tasks are retried). It returns startstop.ErrAlreadyStarted while
// the Dispatcher runs (until Stop, even after ctx ended).
func (d *Dispatcher) Start(ctx context.Context) error {
	d.startMu.Lock()
	defer d.startMu.Unlock()
	if d.Running() {
		return startstop.ErrAlreadyStarted
	}
	s, err := outbound.New(outbound.Config{AllowPrivate: d.cfg.AllowPrivate, MaxResponseBytes: d.cfg.MaxResponseBytes, Logger: d.log})
	if err != nil {
		return fmt.Errorf("relay: dispatcher sender: %w", err)
	}
	d.mu.Lock()
	d.breakers = outbound.NewBreakers(d.cfg.Breaker.engine())
	d.mu.Unlock()
	d.sender = s
	d.freed = make(chan struct{}, 1)
	d.wakes = make(map[string]bool)
	w, err := d.c.watch(ctx, d.onWake, d.c.ch.wake)
	if err != nil {
		s.Close()
		return fmt.Errorf("relay: dispatcher subscribe: %w", err)
	}
	if err := d.Run(ctx, func(stop context.Context) { d.run(ctx, stop.Done(), w) }); err != nil {
		w.Stop()
		s.Close()
		return err
	}
	return nil
}

// run is one run of the Dispatcher, from Start until stop is closed (by Stop, or as ctx ends).
// Then it takes no more tasks, but the calls under way and the storing of their results go on,
// on ctx, until they are done: Stop waits for them, while the end of ctx abandons them.
func (d *Dispatcher) run(ctx context.Context, stop <-chan struct{}, w *notify.Waiter) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan dispatchJob, d.cfg.Workers)
	results := make(chan callResult, d.cfg.Workers)
	late := make(chan lateCall, d.cfg.Workers)

	var workers, finishers sync.WaitGroup
	for range d.cfg.Workers {
		workers.Go(func() { d.work(ctx, jobs, results, late) })
	}
	for range 2 {
		finishers.Go(func() { d.finish(ctx, results) })
	}
	var reporter sync.WaitGroup
	reporter.Go(func() { d.reportLate(ctx, late) })
	var maint sync.WaitGroup
	if d.cfg.MaintainInterval > 0 {
		maint.Go(func() { d.maintain(ctx) })
	}
	d.loop(ctx, stop, w, jobs)
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
}

// Stop stops taking tasks, waits for the calls under way and stores their results, then
// returns. It is safe to call twice or from two goroutines at once; a Dispatcher can be started
// again after Stop.
func (d *Dispatcher) Stop() { d.Base.Stop() }

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
