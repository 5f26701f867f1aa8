package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/tracing"
)

// lateCall is a rate-limited call that started later than lateAfter after its token's time.
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
		callCtx, span := d.startCall(callCtx, &j)
		resp, err := d.sender.Do(callCtx, j.req)
		d.release()
		if ctx.Err() != nil {
			tracing.EndCall(span, resp.Status, err, "")
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
		tracing.EndCall(span, resp.Status, err, callOutcomes[code])
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

// watchLate returns ctx with a trace that measures how late j's call starts: when its request's
// first bytes have been handed to the kernel (outbound.NotifyNextWrite, registered once the call
// has its connection, after a dial if one was needed), so the start log never takes a call for
// earlier than it left. (net/http's WroteRequest fires before the transport flushes the request,
// and the flushing goroutine was seen to lag 21 ms on a busy machine; it is the fallback for a
// connection outbound cannot watch.) A call later than lateAfter is reported before the call
// returns, so its real start reaches the start log while it still matters (within the second
// after the call).
func (d *Dispatcher) watchLate(ctx context.Context, j dispatchJob, late chan<- lateCall) context.Context {
	var once sync.Once
	check := func(at time.Time) {
		once.Do(func() {
			if l := at.Sub(j.token); l > lateAfter {
				d.stats.late.Add(1)
				late <- lateCall{endpoint: j.endpoint.Name, id: j.id, late: l}
			}
		})
	}
	var unwatched atomic.Bool
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			unwatched.Store(!outbound.NotifyNextWrite(info.Conn, check))
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if unwatched.Load() {
				check(time.Now())
			}
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
