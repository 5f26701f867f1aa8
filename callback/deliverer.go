package callback

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
)

// Outcome is what one try of a callback came to.
type Outcome string

// The outcomes of a try.
const (
	// OutcomeDelivered: a 2xx; the job is done with the response body as its result.
	OutcomeDelivered Outcome = "delivered"
	// OutcomeRetried: a failed try (connection error, timeout, 5xx, 429) with tries left.
	OutcomeRetried Outcome = "retried"
	// OutcomeDead: out of tries, or a final answer (4xx other than 429, a refused destination):
	// the job is in the dead letter with the last status and error.
	OutcomeDead Outcome = "dead"
	// OutcomeExpired: the job's ttl ended before its next try.
	OutcomeExpired Outcome = "expired"
	// OutcomeReleased: the try was not made (shutdown, or the destination's or endpoint's limits
	// left no room while the lease still covered the call: Error says which); the job was given
	// back without using a try.
	OutcomeReleased Outcome = "released"
	// OutcomeLost: the outcome could not be recorded (the lease had run out, or Redis failed); the
	// job is delivered again after its lease, with the same webhook-id.
	OutcomeLost Outcome = "lost"
)

// Event describes one try, for metrics (DelivererConfig.OnDelivery).
type Event struct {
	Namespace string
	Queue     string
	JobID     string
	Delivery  int
	// Endpoint is the request queue endpoint whose limits the call counted against
	// (DelivererConfig.Relay), "" when it was under none.
	Endpoint string
	Outcome  Outcome
	// Status is the HTTP status (0 when no response arrived).
	Status int
	// Error is what went wrong ("" on success).
	Error string
	// Duration is the HTTP call, from sending to the end of the response body.
	Duration time.Duration
	// Lateness is how long after the job was due the call was sent: the lease's lag behind the
	// due time by Redis's clock, plus the time the deliverer took to send it.
	Lateness time.Duration
}

// DelivererStats counts tries by outcome since Start.
type DelivererStats struct {
	Delivered, Retried, Dead, Expired, Released, Lost int64
	// InFlight is the number of callback jobs leased and not yet finished.
	InFlight int
	// Visits counts the lease calls made on callback lanes (one script call each): lanes the due
	// index had due, lanes named by notifications, lanes with jobs left. Idle lanes are never
	// visited.
	Visits int64
	// LaneFailures counts the visits that failed (the lane is retried after a backoff).
	LaneFailures int64
}

// Deliverer sends due callback jobs (queue.Callback) to their URLs: signed with the Standard
// Webhooks headers, checked against the namespace's allowed destinations, through the outbound
// engine (private addresses refused at dial time unless allowed, bounded reads), within the
// limits of the request queue endpoint whose target URL covers the callback URL
// (DelivererConfig.Relay: tasks and callbacks to one service share its QPS and concurrency) or
// else the per-destination limits; then it acks the job with the response or nacks it for a
// retry or the dead letter. Any number of Deliverers, in any number of processes, share one Redis: each job
// is leased by one of them, and a deliverer that dies mid-call loses nothing, since the lease runs
// out and the job is delivered again with the same webhook-id.
//
// It finds work without looking at idle lanes: the scripts that put a callback job on a queue's
// callback lane (or schedule one) record the lane in a due index in the same call, which the
// deliverer reads every PollInterval in bounded batches; they also announce the work on one
// Pub/Sub channel, so it is sent at once. A lane whose visit fails is logged and tried again after
// a backoff, never holding up the others.
type Deliverer struct {
	startstop.Base // the run's lifecycle: Start subscribes, then Base.Run runs the workers

	cfg    DelivererConfig
	store  *Store
	strict *outbound.Sender // refuses private addresses
	open   *outbound.Sender // allows them (DelivererConfig.AllowPrivate or the namespace's setting)
	rate   *ratelimit.Limiter
	conc   *ratelimit.Concurrency

	settings *settingsCache
	tracer   *tracing.Tracer // the queue client's (nil: tracing off)

	notes chan queue.QueueRef // queues named by notifications
	freed chan struct{}       // a leased job finished: there may be room to lease more
	slots chan struct{}       // one token per leased, unfinished job (capacity Workers)

	delivered, retried, dead, expired, released, lost atomic.Int64
	visits, laneFailures                              atomic.Int64

	backoff laneBackoff // lanes whose visit failed in a row (lanes.go)

	startMu sync.Mutex // one Start at a time: it subscribes before Base.Run starts the run
}

var _ startstop.Service = (*Deliverer)(nil)

// callbackWork is one leased job on its way to a worker.
type callbackWork struct {
	job      queue.CallbackJob
	received time.Time
}

// NewDeliverer returns a stopped Deliverer.
func NewDeliverer(cfg DelivererConfig) (*Deliverer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	prefix := cfg.Queue.Config().Prefix
	store, err := newStore(cfg.Redis, prefix, cfg.Logger)
	if err != nil {
		return nil, err
	}
	ocfg := outbound.Config{
		MaxResponseBytes:    cfg.MaxResultBytes,
		Timeout:             queue.MaxCallbackTimeout,
		UserAgent:           cfg.UserAgent,
		TLSConfig:           cfg.TLSConfig,
		Logger:              cfg.Logger,
		MaxIdleConnsPerHost: max(cfg.Workers, 2),
	}
	strict, err := outbound.New(ocfg)
	if err != nil {
		return nil, err
	}
	ocfg.AllowPrivate = true
	open, err := outbound.New(ocfg)
	if err != nil {
		return nil, err
	}
	qc := cfg.Queue.Config()
	d := &Deliverer{
		tracer:   tracing.New(qc.TracerProvider, qc.TraceLinks),
		cfg:      cfg,
		store:    store,
		strict:   strict,
		open:     open,
		settings: newSettingsCache(store, cfg.SettingsTTL),
		notes:    make(chan queue.QueueRef, 1024),
		freed:    make(chan struct{}, 1),
		slots:    make(chan struct{}, cfg.Workers),
	}
	if cfg.DestinationRate > 0 {
		d.rate, err = ratelimit.New(cfg.Redis, ratelimit.Config{
			Prefix: prefix, Name: "callback-destination", Limit: ratelimit.PerSecond(cfg.DestinationRate),
			Logger: cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
	}
	if cfg.DestinationConcurrency > 0 {
		if d.conc, err = ratelimit.NewConcurrency(cfg.Redis, ratelimit.ConcurrencyConfig{Prefix: prefix}); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Store returns the callback settings store the deliverer reads (under the queue's prefix).
func (d *Deliverer) Store() *Store { return d.store }

// Start subscribes to callback notifications and starts the workers. They run until ctx ends or
// Stop is called. It returns startstop.ErrAlreadyStarted while the Deliverer runs (until Stop,
// even after ctx ended).
func (d *Deliverer) Start(ctx context.Context) error {
	d.startMu.Lock()
	defer d.startMu.Unlock()
	if d.Running() {
		return startstop.ErrAlreadyStarted
	}
	ps := d.cfg.Redis.Subscribe(ctx, d.cfg.Queue.CallbackChannel())
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return fmt.Errorf("callback: deliverer: subscribe: %w", err)
	}
	if err := d.Run(ctx, func(fetchCtx context.Context) { d.run(ctx, fetchCtx, ps) }); err != nil {
		_ = ps.Close()
		return err
	}
	return nil
}

// run is one run of the Deliverer: it leases and delivers callback jobs until fetchCtx ends (at
// Stop, or as ctx ends). Then jobs leased and not yet sent are given back, and calls in flight
// may finish for up to ShutdownTimeout before they are cancelled (they are retried later, with
// the same webhook-id).
func (d *Deliverer) run(ctx, fetchCtx context.Context, ps *redis.PubSub) {
	callCtx, stopCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCalls()
	jobs := make(chan callbackWork, d.cfg.Workers)
	due := make(chan dueRead)
	var listener, workers sync.WaitGroup
	listener.Go(func() { d.listen(fetchCtx, ps) })
	listener.Go(func() { d.pollDue(fetchCtx, due) })
	stopping := func() bool { return fetchCtx.Err() != nil }
	for range d.cfg.Workers {
		workers.Go(func() {
			for w := range jobs {
				d.deliver(callCtx, stopping, w)
			}
		})
	}
	d.fetchLoop(fetchCtx, due, jobs)
	close(jobs)
	listener.Wait()
	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	timer := time.NewTimer(d.cfg.ShutdownTimeout)
	select {
	case <-done:
	case <-timer.C:
		stopCalls()
		<-done
	}
	timer.Stop()
	d.strict.Close()
	d.open.Close()
}

// Stop stops leasing, gives back leased jobs not yet sent, lets calls in flight finish for up to
// ShutdownTimeout (then cancels them: they are retried later), and waits for the workers. It is
// safe to call twice or from two goroutines at once; a Deliverer can be started again after Stop.
func (d *Deliverer) Stop() { d.Base.Stop() }

// Stats returns the deliverer's counters.
func (d *Deliverer) Stats() DelivererStats {
	return DelivererStats{
		Delivered: d.delivered.Load(), Retried: d.retried.Load(), Dead: d.dead.Load(),
		Expired: d.expired.Load(), Released: d.released.Load(), Lost: d.lost.Load(),
		InFlight: len(d.slots), Visits: d.visits.Load(), LaneFailures: d.laneFailures.Load(),
	}
}

// listen turns callback notifications into queue visits until ctx ends.
func (d *Deliverer) listen(ctx context.Context, ps *redis.PubSub) {
	ch := ps.Channel()
	defer func() { _ = ps.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			if ref, ok := queue.ParseCallbackNotification(m.Payload); ok {
				select {
				case d.notes <- ref:
				default: // full: the due index finds the work
				}
			}
		}
	}
}

// finish frees the job's slot and tells the fetch loop.
func (d *Deliverer) finish() {
	<-d.slots
	select {
	case d.freed <- struct{}{}:
	default:
	}
}

// deliver makes one try of a leased callback job and records its outcome; once stopping reports
// true (the run is stopping) it gives the job back instead.
func (d *Deliverer) deliver(ctx context.Context, stopping func() bool, w callbackWork) {
	defer d.finish()
	job := w.job
	ev := Event{Namespace: job.Namespace, Queue: job.Queue, JobID: job.ID, Delivery: job.Delivery.Delivery}
	// Reports go through even while calls are being cancelled at shutdown.
	report := context.WithoutCancel(ctx)
	if stopping() {
		d.release(report, job, &ev)
		return
	}
	set, err := d.settings.get(ctx, job.Namespace)
	if err != nil {
		d.nack(report, job, &ev, "callback: read namespace settings: "+err.Error(), nil, false)
		return
	}
	cb := job.Callback
	if !outbound.UnderPrefix(cb.URL, set.Destinations...) {
		d.nack(report, job, &ev, "callback: destination not allowed: the url is not under any of the namespace's allowed destinations", nil, true)
		return
	}
	// The wait for the limits must end while the lease still covers the call.
	limitCtx, cancelLimit := context.WithDeadline(ctx, job.LeaseUntil.Add(-cb.Timeout))
	defer cancelLimit()
	var releaseSlot func(context.Context) error
	if ep, ok, err := d.endpointFor(ctx, cb.URL); err != nil {
		ev.Error = "callback: read the request queue's endpoints: " + err.Error()
		d.release(report, job, &ev)
		return
	} else if ok {
		// The endpoint's limits replace the per-destination ones: tasks and callbacks to the
		// service share one budget. The slot frees itself a second after the call's timeout
		// should this process die mid-call.
		ev.Endpoint = ep
		holder := job.Namespace + "/" + job.Queue + "/" + job.ID + "/" + strconv.Itoa(job.Delivery.Delivery)
		releaseSlot, err = d.cfg.Relay.HoldSlot(limitCtx, ep, holder, cb.Timeout+time.Second)
		if err != nil {
			ev.Error = "callback: no slot of endpoint " + ep + " while the lease still covered the call: " + err.Error()
			d.release(report, job, &ev)
			return
		}
	} else {
		dest := destination(cb.URL)
		if d.rate != nil {
			if _, err := d.rate.Wait(limitCtx, dest); err != nil {
				d.release(report, job, &ev)
				return
			}
		}
		if d.conc != nil {
			lease, err := d.conc.AcquireWait(limitCtx, dest, d.cfg.DestinationConcurrency, cb.Timeout+time.Second)
			if err != nil || !lease.Acquired {
				d.release(report, job, &ev)
				return
			}
			defer func() { _ = d.conc.Release(report, dest, lease.LeaseID) }()
		}
	}

	header := make(http.Header, len(cb.Header)+4)
	for k, v := range cb.Header {
		header.Set(k, v)
	}
	if header.Get("Content-Type") == "" {
		if json.Valid(job.Payload) {
			header.Set("Content-Type", "application/json")
		} else {
			header.Set("Content-Type", "application/octet-stream")
		}
	}
	sent := time.Now()
	Sign(header, set.Secrets, job.ID, sent, job.Payload)
	ev.Lateness = job.LeasedAt.Sub(job.DueAt) + sent.Sub(w.received)
	sender := d.strict
	if d.cfg.AllowPrivate || set.AllowPrivate {
		sender = d.open
	}
	callCtx, span, header := d.startCall(ctx, &job, header)
	resp, callErr := sender.Do(callCtx, outbound.Request{
		Method: cb.Method, URL: cb.URL, Header: header, Body: job.Payload, Timeout: cb.Timeout,
	})
	if releaseSlot != nil {
		// Freed before the outcome is recorded, so the endpoint's next call need not wait for it.
		if err := releaseSlot(report); err != nil {
			d.cfg.Logger.Warn("callback deliverer: release endpoint slot; it frees itself at its expiry",
				"endpoint", ev.Endpoint, "job_id", job.ID, "error", err)
		}
	}
	ev.Duration, ev.Status = resp.Duration, resp.Status
	outcome, retryAfter := outbound.Classify(resp, callErr)
	tracing.EndCall(span, resp.Status, callErr, tryOutcomes[outcome])
	switch outcome {
	case outbound.Success:
		_, err := d.cfg.Queue.FinishCallback(report, queue.FinishCallbackParams{
			Namespace: job.Namespace, Queue: job.Queue, ID: job.ID, Delivery: job.Delivery.Delivery,
			Attempt: attemptOf(&ev), Delivered: true, Result: resp.Body,
		})
		if err != nil {
			d.lostReport(job, &ev, err)
			return
		}
		ev.Outcome = OutcomeDelivered
		d.delivered.Add(1)
		d.emit(ev)
	default:
		var after *time.Duration
		if retryAfter > 0 {
			after = &retryAfter
		}
		if span != nil { // the nack keeps the try's span for the next try's to link to
			report = trace.ContextWithSpan(report, span)
		}
		d.nack(report, job, &ev, describeFailure(resp, callErr), after, outcome == outbound.Final)
	}
}

// describeFailure is the error kept with the job: the status and the start of the body, or the
// error of a call that got no response.
func describeFailure(resp outbound.Response, err error) string {
	if resp.Status != 0 {
		body := resp.Body
		if len(body) > 200 {
			body = body[:200]
		}
		return fmt.Sprintf("callback: HTTP %d: %s", resp.Status, body)
	}
	return "callback: " + err.Error()
}

func (d *Deliverer) nack(ctx context.Context, job queue.CallbackJob, ev *Event, reason string, after *time.Duration, final bool) {
	ev.Error = reason
	out, err := d.cfg.Queue.FinishCallback(ctx, queue.FinishCallbackParams{
		Namespace: job.Namespace, Queue: job.Queue, ID: job.ID, Delivery: job.Delivery.Delivery,
		Attempt: attemptOf(ev), Error: reason, RetryAfter: after, NoRetry: final,
	})
	if err != nil {
		d.lostReport(job, ev, err)
		return
	}
	switch queue.NackOutcome(out) {
	case queue.NackRetried:
		ev.Outcome = OutcomeRetried
		d.retried.Add(1)
	case queue.NackExpired:
		ev.Outcome = OutcomeExpired
		d.expired.Add(1)
	default:
		ev.Outcome = OutcomeDead
		d.dead.Add(1)
	}
	d.emit(*ev)
}

// attemptOf is the try ev describes, as the job's list of attempts keeps it: sent Duration ago
// (now, when no call was made).
func attemptOf(ev *Event) queue.CallbackAttempt {
	return queue.CallbackAttempt{At: time.Now().Add(-ev.Duration), Status: ev.Status, Latency: ev.Duration, Error: ev.Error}
}

func (d *Deliverer) release(ctx context.Context, job queue.CallbackJob, ev *Event) {
	err := d.cfg.Queue.Release(ctx, queue.ReleaseParams{Namespace: job.Namespace, Queue: job.Queue, ID: job.ID, Delivery: job.Delivery.Delivery})
	if err != nil {
		d.lostReport(job, ev, err)
		return
	}
	ev.Outcome = OutcomeReleased
	d.released.Add(1)
	d.emit(*ev)
}

func (d *Deliverer) lostReport(job queue.CallbackJob, ev *Event, err error) {
	ev.Outcome = OutcomeLost
	if ev.Error == "" {
		ev.Error = err.Error()
	}
	d.lost.Add(1)
	d.cfg.Logger.Warn("callback deliverer: could not record a try; the job is delivered again after its lease",
		"namespace", job.Namespace, "queue", job.Queue, "job_id", job.ID, "error", err)
	d.emit(*ev)
}

func (d *Deliverer) emit(ev Event) {
	if d.cfg.OnDelivery != nil {
		d.cfg.OnDelivery(ev)
	}
}

// endpointFor finds the endpoint of Relay whose target URL covers a callback URL (the longest,
// as for tasks), from the endpoint settings every relay Client keeps fresh.
func (d *Deliverer) endpointFor(ctx context.Context, rawURL string) (string, bool, error) {
	if d.cfg.Relay == nil {
		return "", false, nil
	}
	return d.cfg.Relay.CoveringEndpoint(ctx, rawURL)
}

// destination is the key of per-destination limits: scheme, host and port.
func destination(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}
