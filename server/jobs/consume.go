package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"

	"github.com/sluicehq/sluice/queue"
)

type consumeRequest struct {
	Queues  []string `json:"queues"`
	Count   *int     `json:"count"`
	TTR     *float64 `json:"ttr"`
	Timeout *float64 `json:"timeout"`
}

// DeliveryJSON is a leased job as consume returns it.
type DeliveryJSON struct {
	JobID          string            `json:"job_id"`
	Queue          string            `json:"queue"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64  *string           `json:"payload_base64,omitempty"`
	Delivery       int               `json:"delivery"`
	RemainingTries int               `json:"remaining_tries"`
	Priority       int               `json:"priority"`
	Attributes     map[string]string `json:"attributes"`
	PublishedAt    time.Time         `json:"published_at"`
	ElapsedMS      int64             `json:"elapsed_ms"`
	LeaseUntil     time.Time         `json:"lease_until"`
	ExpiresAt      *time.Time        `json:"expires_at,omitempty"`
}

func toDeliveryJSON(d queue.Delivery) DeliveryJSON {
	pl := encodePayload(d.Payload, d.Attributes)
	return DeliveryJSON{
		JobID: d.ID, Queue: d.Queue, Payload: pl.JSON, PayloadBase64: pl.Base64, Delivery: d.Delivery,
		RemainingTries: d.RemainingTries, Priority: d.Priority, Attributes: httpapi.PublicAttributes(d.Attributes),
		PublishedAt: d.PublishedAt.UTC(), ElapsedMS: d.Elapsed.Milliseconds(), LeaseUntil: d.LeaseUntil.UTC(),
		ExpiresAt: timePtr(d.ExpiresAt),
	}
}

// consume is POST /v1/ns/{ns}/consume. A blocking consume ends when a job is ready, when its
// timeout passes, when the client goes away, or when the server starts shutting down (then it
// answers with no jobs). A consume that gets no job is refunded to the token's read limit.
func (a *API) consume(w http.ResponseWriter, r *http.Request) error {
	var req consumeRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	p := queue.ConsumeParams{Namespace: r.PathValue("ns"), Queues: req.Queues}
	if len(req.Queues) == 0 {
		return httpapi.InvalidArg("queues", "name at least one queue")
	}
	if req.Count != nil {
		if *req.Count < 1 || *req.Count > queue.MaxConsumeCount {
			return httpapi.InvalidArg("count", "%d is outside 1..%d", *req.Count, queue.MaxConsumeCount)
		}
		p.Count = *req.Count
	}
	var err error
	if p.TTR, err = atLeastMilli("ttr", req.TTR, "each job's own ttr"); err != nil {
		return err
	}
	if p.Timeout, err = httpapi.Seconds("timeout", req.Timeout); err != nil {
		return err
	}
	if p.Timeout > a.cfg.MaxConsumeTimeout {
		return httpapi.InvalidArg("timeout", "%gs is over the server's limit of %gs", p.Timeout.Seconds(), a.cfg.MaxConsumeTimeout.Seconds())
	}
	ctx := r.Context()
	if a.cfg.WatchConsumer != nil {
		defer a.cfg.WatchConsumer(ctx, p.Namespace, p.Queues)()
	}
	if p.Timeout > 0 { // only a blocking consume waits long enough for a shutdown to end it
		var cancel context.CancelFunc
		ctx, cancel = httpapi.WithDrain(ctx, a.cfg.Drain)
		defer cancel()
	}
	ds, err := a.queue.Consume(ctx, p)
	if err != nil {
		shuttingDown := a.cfg.Drain.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, queue.ErrClosed))
		if !shuttingDown {
			return err
		}
		ds = nil
	}
	if len(ds) == 0 {
		httpapi.RefundRequest(r.Context()) // a consume that got nothing does not count against a read limit
	}
	out := make([]DeliveryJSON, len(ds))
	for i, d := range ds {
		out[i] = toDeliveryJSON(d)
	}
	writeDeliveries(w, out)
	return nil
}
