package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/server/tenant"
)

// Limiter charges requests to their token's rate limit (tenant.LimitStore), for every API that
// counts them: it sets the RateLimit-* headers, answers a denial in the API's own shape, and
// refunds a request that did not do what the limit counts.
type Limiter struct {
	Store *tenant.LimitStore
	Log   *slog.Logger
	// OnDenied, when set, is called for each request the limit refuses (the server counts them).
	OnDenied func(ns string, dir tenant.LimitDir)
}

// Deny makes the error a denied request answers with, in the API's shape.
type Deny func(tok tenant.Token, dir tenant.LimitDir, sp tenant.Spent) error

// Wrap charges each request of next (an authenticated route: the token is in the context) to
// the token's limit in dir. A request that fails, or answers anything but dir's success status,
// is refunded.
func (l *Limiter) Wrap(dir tenant.LimitDir, deny Deny, next Handler) Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		tok, _ := tenant.FromContext(r.Context())
		sp, err := l.Store.Spend(r.Context(), tok, dir)
		if err != nil {
			return err
		}
		if sp.Limited {
			h := w.Header()
			h.Set("RateLimit-Limit", strconv.Itoa(sp.Result.Limit))
			h.Set("RateLimit-Remaining", strconv.Itoa(sp.Result.Remaining))
			h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(sp.Result.ResetAfter), 10))
		}
		if sp.Denied {
			if l.OnDenied != nil {
				l.OnDenied(tok.Namespace, dir)
			}
			w.Header().Set("Retry-After", strconv.FormatInt(max(ceilSeconds(sp.Result.RetryAfter), 1), 10))
			return deny(tok, dir, sp)
		}
		if sp.Charge == nil {
			return next(w, r)
		}
		sw := &StatusRecorder{ResponseWriter: w}
		c := &charge{Charge: sp.Charge, log: l.Log}
		if st := StateOf(r.Context()); st != nil {
			st.charge = c // in the request's state: no copy of the request
		} else {
			r = r.WithContext(context.WithValue(r.Context(), chargeKey{}, c))
		}
		err = next(sw, r)
		if err != nil || sw.Status != dir.OKStatus() {
			refund(r.Context(), sp.Charge, l.Log) //nolint:contextcheck // a refund outlives a request whose client went away
		}
		return err
	}
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

type chargeKey struct{}

type charge struct {
	*tenant.Charge
	log *slog.Logger
}

// RefundRequest gives back the request's charge, for a handler whose request did not do what the
// limit counts although it succeeds (a consume that got no job). No-op without a charge.
func RefundRequest(ctx context.Context) {
	c, _ := ctx.Value(chargeKey{}).(*charge)
	if st := StateOf(ctx); st != nil && st.charge != nil {
		c = st.charge
	}
	if c != nil {
		refund(ctx, c.Charge, c.log)
	}
}

func refund(ctx context.Context, c *tenant.Charge, log *slog.Logger) {
	if err := c.Refund(ctx); err != nil {
		log.WarnContext(ctx, "could not refund a rate-limited request", "key", c.Key(), "error", err,
			"request_id", RequestID(ctx))
	}
}

// StatusRecorder remembers the first status written through it.
type StatusRecorder struct {
	http.ResponseWriter
	Status int
}

// WriteHeader records the status and passes it on.
func (w *StatusRecorder) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and passes the bytes on.
func (w *StatusRecorder) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *StatusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
