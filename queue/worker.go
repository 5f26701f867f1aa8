package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
)

// Consume runs handle on the queue's jobs until ctx ends, then shuts down gracefully and returns
// nil (or ErrClosed when the client is closed first).
//
// Up to cfg.Concurrency handlers run at once. Jobs are leased in batches (one round trip fetches
// a job for every free handler), leases are extended while handlers run, and acks are sent in
// batches, so a busy pool costs well under one Redis round trip per job.
//
// The handler's outcome decides the job's fate:
//   - nil: the job is acked (done);
//   - an error, a panic or the Timeout passing: the job is tried again after the RetryPolicy's
//     delay while it has tries left, else it goes to the dead letter;
//   - RetryAfter(d, err): tried again after d (dead letter when out of tries);
//   - SkipRetry(err): the dead letter at once. A payload that does not decode goes there too.
//
// The handler's context carries the delivery (DeliveryFromContext) and the values of ctx. When
// the worker finds the job's lease gone (the job was deleted, or Redis was out of reach for longer
// than the lease), it cancels that context with cause ErrLeaseLost and drops the handler's result.
//
// When ctx ends Consume stops fetching, hands back the jobs fetched but not started, lets running
// handlers finish for up to cfg.DrainTimeout, then cancels the handlers still running and hands
// back their jobs, flushes the acks and returns once every handler has returned. A job handed back
// (Release) goes to the head of its queue at once without counting a try; a job of a crashed
// process runs again when its lease ends.
func (q *Queue[T]) Consume(ctx context.Context, handle func(ctx context.Context, v *T) error, cfg ConsumeConfig) error {
	if handle == nil {
		return errors.New("queue: nil handler")
	}
	cfg = cfg.withDefaults(q.cfg)
	if err := cfg.validate(); err != nil {
		return err
	}
	h := Handler(func(ctx context.Context, d *Delivery) error {
		v, err := q.decode(d.Payload)
		if err != nil {
			return SkipRetry(fmt.Errorf("queue: decode payload: %w", err))
		}
		return handle(ctx, v)
	})
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		h = cfg.Middleware[i](h)
	}
	w := &worker{
		client:  q.client,
		ns:      q.ns,
		queue:   q.name,
		cfg:     cfg,
		handler: h,
		lease:   cmp.Or(cfg.TTR, q.cfg.TTR),
		stats:   &q.stats,
		log:     cfg.Logger.With(slog.String("namespace", q.ns), slog.String("queue", q.name)),
		slots:   make(chan struct{}, 1),
		stop:    make(chan struct{}),
		acks:    make(chan *heldJob, 4*cfg.AckBatch),
		held:    make(map[*heldJob]struct{}),
		poke:    make(chan struct{}, 1),
	}
	return w.run(ctx)
}

type deliveryKey struct{}

// ContextWithDelivery returns ctx carrying d, as a worker's handler context carries the delivery
// it runs: code that calls a handler itself (a test helper such as queuetest's Drain) gives
// handlers the same DeliveryFromContext.
func ContextWithDelivery(ctx context.Context, d Delivery) context.Context {
	return context.WithValue(ctx, deliveryKey{}, &d)
}

// DeliveryFromContext returns the delivery a handler is running, from the handler's context.
func DeliveryFromContext(ctx context.Context) (Delivery, bool) {
	d, ok := ctx.Value(deliveryKey{}).(*Delivery)
	if !ok {
		return Delivery{}, false
	}
	return *d, true
}

// jobState is where a fetched job is in this process.
type jobState int

const (
	jobQueued   jobState = iota // fetched, waiting for a free handler
	jobRunning                  // the handler runs
	jobFinished                 // the handler returned; ack or nack under way
	jobReleased                 // handed back
	jobLost                     // the lease was found gone
)

// heldJob is a job this process holds a lease on.
type heldJob struct {
	fetched
	mu     sync.Mutex
	state  jobState
	cancel context.CancelCauseFunc // the running handler's context
}

// to moves the job from one state to another and reports whether it was in from.
func (j *heldJob) to(from, to jobState) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != from {
		return false
	}
	j.state = to
	return true
}

type worker struct {
	client  *Client
	ns      string
	queue   string
	cfg     ConsumeConfig
	handler Handler
	lease   time.Duration // the lease a job gets when the consume reply does not say
	stats   *workerCounters
	log     *slog.Logger

	disp     dispatch        // fetched jobs for the handler goroutines
	inflight atomic.Int64    // fetched jobs not yet finished by a handler goroutine
	slots    chan struct{}   // a handler goroutine finished a job
	quit     <-chan struct{} // the consume context's Done: no job starts after it
	stop     chan struct{}   // closed when fetching stopped (ctx ended, or the client closed)
	hard     context.Context // the handlers' base context, cancelled after the drain timeout

	acks chan *heldJob // succeeded jobs to ack

	mu   sync.Mutex
	held map[*heldJob]struct{} // leases to extend
	poke chan struct{}         // a job with a short lease arrived: re-plan extensions
}

func (w *worker) run(ctx context.Context) error {
	// Acks, nacks, releases and lease extensions outlive ctx: they run on calm, which keeps its
	// values but is never cancelled.
	calm := context.WithoutCancel(ctx)
	hard, hardCancel := context.WithCancel(calm)
	defer hardCancel()
	w.hard = hard
	w.quit = ctx.Done()

	var handlers, background sync.WaitGroup
	for range w.cfg.Concurrency {
		handlers.Go(w.handlerLoop)
	}
	extendStop := make(chan struct{})
	background.Go(func() { w.extendLoop(calm, extendStop) })
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		w.ackLoop(calm)
	}()

	err := w.fetchLoop(ctx)
	close(w.stop)

	// Shutdown: stop fetching, hand back what no handler started, drain, hand back the rest.
	waiting := w.disp.drain()
	w.inflight.Add(-int64(len(waiting)))
	w.release(calm, waiting, jobQueued)

	done := make(chan struct{})
	go func() {
		handlers.Wait()
		close(done)
	}()
	drain := time.NewTimer(w.cfg.DrainTimeout)
	select {
	case <-done:
	case <-drain.C:
		var running []*heldJob
		w.mu.Lock()
		for j := range w.held {
			running = append(running, j)
		}
		w.mu.Unlock()
		// Claim the running jobs before cancelling their handlers, so a handler that returns at
		// once on cancellation cannot nack (and use up a try of) a job that is handed back.
		claimed := w.claim(running, jobRunning)
		hardCancel()
		n := w.sendRelease(calm, claimed)
		w.log.Warn("queue worker: handlers still running after the drain timeout; their jobs were handed back",
			slog.Int("jobs", n), slog.Duration("drain_timeout", w.cfg.DrainTimeout))
		<-done
	}
	drain.Stop()
	close(w.acks)
	<-ackDone
	close(extendStop)
	background.Wait()
	return err
}

// fetchLoop leases jobs for free handlers until ctx ends.
func (w *worker) fetchLoop(ctx context.Context) error {
	capacity := int64(w.cfg.Concurrency + w.cfg.Prefetch)
	// While handlers still have fetched jobs to start, wait until a quarter of the capacity is free,
	// so that fetches stay large when jobs are short.
	batch := max(capacity/4, 1)
	var failures int
	for {
		free := capacity - w.inflight.Load()
		if free <= 0 || (free < batch && w.disp.queued() > 0) {
			select {
			case <-ctx.Done():
				return nil
			case <-w.slots:
				continue
			}
		}
		fs, err := w.client.fetch(ctx, w.ns, w.queue, int(min(free, MaxConsumeCount)), w.cfg.TTR, w.lease, time.Minute)
		if len(fs) > 0 {
			js := make([]*heldJob, len(fs))
			for i := range fs {
				js[i] = &fs[i]
				w.track(js[i])
			}
			w.inflight.Add(int64(len(js)))
			w.disp.push(js)
		}
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return err
			}
			failures++
			wait := min(time.Duration(failures)*100*time.Millisecond, 5*time.Second)
			w.log.Warn("queue worker: fetch failed", slog.Any("error", err), slog.Duration("retry_in", wait))
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			return nil
		default:
		}
	}
}

func (w *worker) handlerLoop() {
	// The jobs' contexts derive from one of this goroutine's own, so creating and cancelling them
	// does not contend on the shared parent's lock.
	base, cancel := context.WithCancel(w.hard)
	defer cancel()
	calm := context.WithoutCancel(base)
	wake := make(chan struct{}, 1)
	for {
		j := w.disp.take(wake, w.quit, w.stop)
		if j == nil {
			return
		}
		w.runJob(base, calm, j)
		w.inflight.Add(-1)
		select {
		case w.slots <- struct{}{}:
		default:
		}
	}
}

// runJob runs one job's handler on a context derived from base and settles the outcome (ack,
// nack, release) on calm, which is never cancelled.
func (w *worker) runJob(base, calm context.Context, j *heldJob) {
	select {
	case <-w.quit: // shutting down: hand it back
		w.release(calm, []*heldJob{j}, jobQueued)
		return
	case <-w.stop:
		w.release(calm, []*heldJob{j}, jobQueued)
		return
	default:
	}
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	j.mu.Lock()
	if j.state != jobQueued { // its lease was lost while it waited
		j.mu.Unlock()
		return
	}
	j.state = jobRunning
	j.cancel = cancel
	j.mu.Unlock()
	if w.cfg.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, w.cfg.Timeout)
		defer stop()
	}
	ctx = context.WithValue(ctx, deliveryKey{}, &j.d)
	ctx, span := w.startProcess(ctx, j)

	w.stats.running.Add(1)
	start := time.Now()
	err := w.call(ctx, &j.d)
	w.stats.observe(time.Since(start))
	w.stats.running.Add(-1)

	if !j.to(jobRunning, jobFinished) {
		// handed back after the drain timeout, or lease lost: the result is dropped
		tracing.EndOutcome(span, err, tracing.OutcomeLost)
		return
	}
	if err == nil {
		w.stats.succeeded.Add(1)
		tracing.EndOutcome(span, nil, tracing.OutcomeAck)
		w.acks <- j
		return
	}
	w.stats.failed.Add(1)
	w.fail(calm, j, err, span)
}

// call runs the handler, turning a panic into a *PanicError.
func (w *worker) call(ctx context.Context, d *Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			stack := debug.Stack()
			err = &PanicError{Value: r, Stack: stack}
			w.stats.panics.Add(1)
			w.log.Error("queue worker: handler panicked", slog.String("job_id", d.ID),
				slog.Int("delivery", d.Delivery), slog.Any("panic", r), slog.String("stack", string(stack)))
		}
	}()
	return w.handler(ctx, d)
}

// maxErrorText bounds the error text kept with a failed job.
const maxErrorText = 4096

// fail nacks a job whose handler failed with err and ends its span (nil: tracing off) with the
// nack's outcome.
func (w *worker) fail(calm context.Context, j *heldJob, err error, span trace.Span) {
	defer w.untrack(j)
	outcome := NackOutcome("")
	defer func() {
		tracing.EndOutcome(span, err, cmp.Or(nackOutcomes[outcome], tracing.OutcomeLost))
	}()
	d := &j.d
	p := NackParamsFor(d, err, w.cfg.RetryPolicy)
	text := p.Error
	ctx, cancel := context.WithTimeout(calm, callTimeout)
	defer cancel()
	if span != nil { // the nack keeps the span for the next attempt's to link to
		ctx = trace.ContextWithSpan(ctx, span)
	}
	outcome, nerr := w.client.Nack(ctx, p)
	attrs := []any{slog.String("job_id", d.ID), slog.Int("delivery", d.Delivery), slog.String("error", text)}
	switch {
	case errors.Is(nerr, ErrLeaseLost), errors.Is(nerr, ErrNotFound):
		w.stats.lost.Add(1)
		w.log.Warn("queue worker: job failed and its lease was gone", append(attrs, slog.Any("nack_error", nerr))...)
		return
	case nerr != nil:
		w.log.Error("queue worker: nack failed; the job runs again when its lease ends", append(attrs, slog.Any("nack_error", nerr))...)
		return
	}
	switch outcome {
	case NackRetried:
		w.stats.retried.Add(1)
		if p.RetryAfter != nil {
			attrs = append(attrs, slog.Duration("retry_in", *p.RetryAfter))
		}
		w.log.Warn("queue worker: job failed; retrying", attrs...)
	case NackDead:
		w.stats.dead.Add(1)
		w.log.Warn("queue worker: job failed; moved to the dead letter", attrs...)
	case NackExpired:
		w.stats.expired.Add(1)
		w.log.Warn("queue worker: job failed; its ttl ends before another try", attrs...)
	}
}

// release hands jobs in state from back to the queue in one round trip and returns how many.
func (w *worker) release(calm context.Context, js []*heldJob, from jobState) int {
	return w.sendRelease(calm, w.claim(js, from))
}

// claim moves the jobs in state from to released and returns them.
func (w *worker) claim(js []*heldJob, from jobState) []*heldJob {
	var mine []*heldJob
	for _, j := range js {
		if j.to(from, jobReleased) {
			mine = append(mine, j)
		}
	}
	return mine
}

// sendRelease hands claimed jobs back in one round trip and returns how many went back.
func (w *worker) sendRelease(calm context.Context, mine []*heldJob) int {
	if len(mine) == 0 {
		return 0
	}
	ds := make([]*Delivery, len(mine))
	for i, j := range mine {
		ds[i] = &j.d
	}
	defer func() {
		for _, j := range mine {
			w.untrack(j)
		}
	}()
	ctx, cancel := context.WithTimeout(calm, callTimeout)
	defer cancel()
	errs, err := w.client.releaseMany(ctx, ds)
	if err != nil {
		w.log.Error("queue worker: release failed; the jobs run again when their leases end",
			slog.Int("jobs", len(ds)), slog.Any("error", err))
		return 0
	}
	n := 0
	for i, e := range errs {
		if e != nil {
			w.stats.lost.Add(1)
			w.log.Warn("queue worker: release found the lease gone", slog.String("job_id", ds[i].ID), slog.Any("error", e))
			continue
		}
		n++
	}
	w.stats.released.Add(int64(n))
	return n
}

// ackLoop sends the acks of succeeded jobs in batches until w.acks is closed and empty. After the
// first ack of a batch it sleeps AckInterval (rather than waking for every ack), then sends what
// arrived meanwhile, AckBatch acks per call.
func (w *worker) ackLoop(calm context.Context) {
	batch := make([]*heldJob, 0, w.cfg.AckBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		j, ok := <-w.acks
		if !ok {
			return
		}
		batch = append(batch[:0], j)
		if w.cfg.AckInterval > 0 {
			timer.Reset(w.cfg.AckInterval)
			<-timer.C
		}
		closed := false
		for {
		fill:
			for len(batch) < w.cfg.AckBatch {
				select {
				case j, ok := <-w.acks:
					if !ok {
						closed = true
						break fill
					}
					batch = append(batch, j)
				default:
					break fill
				}
			}
			full := len(batch) == w.cfg.AckBatch
			w.flushAcks(calm, batch)
			batch = batch[:0]
			if !full || closed {
				break
			}
		}
		if closed {
			return
		}
	}
}

func (w *worker) flushAcks(calm context.Context, batch []*heldJob) {
	ps := make([]AckParams, len(batch))
	for i, j := range batch {
		ps[i] = AckParams{Namespace: j.d.Namespace, Queue: j.d.Queue, ID: j.d.ID, Delivery: j.d.Delivery}
	}
	var errs []error
	var err error
	for attempt := range 3 {
		ctx, cancel := context.WithTimeout(calm, callTimeout)
		errs, err = w.client.AckMany(ctx, ps)
		cancel()
		if err == nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
	}
	for _, j := range batch {
		w.untrack(j)
	}
	if err != nil {
		w.log.Error("queue worker: ack failed; the jobs run again when their leases end",
			slog.Int("jobs", len(batch)), slog.Any("error", err))
		return
	}
	for i, e := range errs {
		if e != nil {
			w.stats.lost.Add(1)
			w.log.Warn("queue worker: job succeeded but its lease was gone; it may run again",
				slog.String("job_id", ps[i].ID), slog.Int("delivery", ps[i].Delivery), slog.Any("error", e))
		}
	}
}

func (w *worker) track(j *heldJob) {
	w.mu.Lock()
	w.held[j] = struct{}{}
	w.mu.Unlock()
	if j.lease < 4*time.Second {
		select {
		case w.poke <- struct{}{}:
		default:
		}
	}
}

func (w *worker) untrack(j *heldJob) {
	w.mu.Lock()
	delete(w.held, j)
	w.mu.Unlock()
}

// extendLoop extends the leases of held jobs when a third of their lease has passed, in one
// pipelined round trip per pass, until stop is closed.
func (w *worker) extendLoop(calm context.Context, stop chan struct{}) {
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-w.poke:
		case <-timer.C:
		}
		next := w.extendDue(calm)
		timer.Reset(min(max(next, 5*time.Millisecond), time.Second))
	}
}

// extendDue touches the leases past a third of their length and returns how long until the next
// one is.
func (w *worker) extendDue(calm context.Context) time.Duration {
	now := time.Now()
	next := time.Second
	var due []*heldJob
	w.mu.Lock()
	for j := range w.held {
		j.mu.Lock()
		at := j.leaseEnd.Add(-j.lease * 2 / 3).Sub(now)
		j.mu.Unlock()
		if at <= 0 {
			due = append(due, j)
		} else {
			next = min(next, at)
		}
	}
	w.mu.Unlock()
	if len(due) == 0 {
		return next
	}
	ds := make([]*Delivery, len(due))
	for i, j := range due {
		ds[i] = &j.d
	}
	ctx, cancel := context.WithTimeout(calm, callTimeout)
	defer cancel()
	sent := time.Now()
	errs, err := w.client.touchMany(ctx, ds, w.cfg.TTR)
	if err != nil {
		w.log.Warn("queue worker: lease extension failed", slog.Int("jobs", len(ds)), slog.Any("error", err))
		return 100 * time.Millisecond
	}
	for i, j := range due {
		lease := j.lease
		j.mu.Lock()
		if errs[i] == nil {
			j.leaseEnd = sent.Add(lease)
			j.mu.Unlock()
			next = min(next, lease/3)
			continue
		}
		state := j.state
		cancel := j.cancel
		if state == jobQueued || state == jobRunning {
			j.state = jobLost
		}
		j.mu.Unlock()
		if state != jobQueued && state != jobRunning {
			continue // finished or handed back meanwhile: the ack, nack or release settled it
		}
		w.untrack(j)
		w.stats.lost.Add(1)
		w.log.Warn("queue worker: lease lost; the job may run elsewhere", slog.String("job_id", j.d.ID),
			slog.Int("delivery", j.d.Delivery), slog.Any("error", errs[i]))
		if cancel != nil {
			cancel(ErrLeaseLost)
		}
	}
	return next
}
