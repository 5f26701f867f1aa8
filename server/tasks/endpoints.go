package tasks

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// EndpointJSON is an endpoint's settings as the admin API reads and writes them; durations are
// in seconds. PUT replaces every setting (one left out takes its default).
type EndpointJSON struct {
	Name                string    `json:"name"`
	TargetURL           string    `json:"target_url"`
	QPS                 float64   `json:"qps"`
	Concurrency         int       `json:"concurrency"`
	Timeout             float64   `json:"timeout"`
	QueueTimeout        float64   `json:"queue_timeout"`
	MaxQueued           int       `json:"max_queued"`
	MaxQueuedPerSubject int       `json:"max_queued_per_subject"`
	FairShare           bool      `json:"fair_share"`
	Tries               int       `json:"tries"`
	AvgDuration         float64   `json:"avg_duration"`
	RetryBackoff        float64   `json:"retry_backoff"`
	MaxRetryBackoff     float64   `json:"max_retry_backoff"`
	PermitTTL           float64   `json:"permit_ttl"`
	PermitMethods       []string  `json:"permit_methods,omitempty"`
	PermitPathPrefix    string    `json:"permit_path_prefix,omitempty"`
	UpdatedAt           time.Time `json:"updated_at,omitzero"`
}

// EndpointBody is an endpoint's settings without its name: the body of PUT /v1/endpoints/{name}
// and an entry of the config file's relay_endpoints. Durations are in seconds.
type EndpointBody struct {
	TargetURL           string   `json:"target_url"`
	QPS                 *float64 `json:"qps"`
	Concurrency         *int     `json:"concurrency"`
	Timeout             *float64 `json:"timeout"`
	QueueTimeout        *float64 `json:"queue_timeout"`
	MaxQueued           *int     `json:"max_queued"`
	MaxQueuedPerSubject *int     `json:"max_queued_per_subject"`
	FairShare           *bool    `json:"fair_share"`
	Tries               *int     `json:"tries"`
	AvgDuration         *float64 `json:"avg_duration"`
	RetryBackoff        *float64 `json:"retry_backoff"`
	MaxRetryBackoff     *float64 `json:"max_retry_backoff"`
	PermitTTL           *float64 `json:"permit_ttl"`
	// PermitMethods and PermitPathPrefix bind online tasks' permits to the methods and the path
	// the endpoint's gateway admits with them (relay.Endpoint).
	PermitMethods    []string `json:"permit_methods"`
	PermitPathPrefix string   `json:"permit_path_prefix"`
}

// EndpointParams turns an endpoint's JSON settings (the admin API's body, or an entry of the
// config file's relay_endpoints) into a relay.Endpoint, naming the field at fault.
func EndpointParams(name string, b EndpointBody) (relay.Endpoint, error) {
	e := relay.Endpoint{Name: name, TargetURL: b.TargetURL, PermitMethods: b.PermitMethods, PermitPathPrefix: b.PermitPathPrefix}
	if b.QPS != nil {
		e.QPS = *b.QPS
	}
	if b.FairShare != nil {
		e.FairShare = *b.FairShare
	}
	for _, f := range []struct {
		dst *int
		v   *int
	}{{&e.Concurrency, b.Concurrency}, {&e.MaxQueued, b.MaxQueued}, {&e.MaxQueuedPerSubject, b.MaxQueuedPerSubject}, {&e.Tries, b.Tries}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	for _, f := range []struct {
		field string
		dst   *time.Duration
		v     *float64
	}{
		{"timeout", &e.Timeout, b.Timeout}, {"queue_timeout", &e.QueueTimeout, b.QueueTimeout},
		{"avg_duration", &e.AvgDuration, b.AvgDuration}, {"retry_backoff", &e.RetryBackoff, b.RetryBackoff},
		{"max_retry_backoff", &e.MaxRetryBackoff, b.MaxRetryBackoff}, {"permit_ttl", &e.PermitTTL, b.PermitTTL},
	} {
		d, err := httpapi.Seconds(f.field, f.v)
		if err != nil {
			return e, err
		}
		*f.dst = d
	}
	return e, nil
}

// CheckTarget refuses (400 on target_url, naming the setting that allows it) a target URL that
// is, or resolves only to, a loopback or private address while allowPrivate (the server's
// relay_allow_private) is false: every offline call to it would fail with "destination refused".
// The dispatcher still checks the address of each call it makes.
func CheckTarget(ctx context.Context, targetURL string, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	if err := outbound.CheckURLHost(ctx, targetURL); err != nil {
		return httpapi.InvalidArg("target_url", "%s: offline calls to it would be refused; set relay_allow_private "+
			"(SLUICE_RELAY_ALLOW_PRIVATE) to let Sluice call loopback and private addresses",
			strings.TrimPrefix(err.Error(), "outbound: "))
	}
	return nil
}

func endpointJSON(e relay.Endpoint) EndpointJSON {
	return EndpointJSON{
		Name: e.Name, TargetURL: e.TargetURL, QPS: e.QPS, Concurrency: e.Concurrency,
		Timeout: e.Timeout.Seconds(), QueueTimeout: e.QueueTimeout.Seconds(), MaxQueued: e.MaxQueued,
		MaxQueuedPerSubject: e.MaxQueuedPerSubject, FairShare: e.FairShare, Tries: e.Tries, AvgDuration: e.AvgDuration.Seconds(),
		RetryBackoff: e.RetryBackoff.Seconds(), MaxRetryBackoff: e.MaxRetryBackoff.Seconds(),
		PermitTTL: e.PermitTTL.Seconds(), PermitMethods: e.PermitMethods, PermitPathPrefix: e.PermitPathPrefix,
		UpdatedAt: e.UpdatedAt,
	}
}

// EndpointStatsJSON are an endpoint's live numbers.
type EndpointStatsJSON struct {
	Queued          int64            `json:"queued"`
	Retrying        int64            `json:"retrying"`
	Running         int64            `json:"running"`
	Slots           int64            `json:"slots"`
	SlotsReleased   int64            `json:"slots_released"`
	SlotsExpired    int64            `json:"slots_expired"`
	CompletedPerSec float64          `json:"completed_per_sec"`
	AvgDuration     float64          `json:"avg_duration"`
	Rate            float64          `json:"rate"`
	Totals          map[string]int64 `json:"totals"`
	// ETA is the estimated wait (seconds; null: unknown) of a task with wait_num tasks ahead, for
	// a few positions and for one submitted now (wait_num = queued).
	ETA []ETAJSON `json:"eta"`
}

// ETAJSON is the estimated wait at one position.
type ETAJSON struct {
	WaitNum  int64    `json:"wait_num"`
	WaitTime *float64 `json:"wait_time"`
}

// EndpointWithStats is an endpoint in GET /v1/endpoints and GET /v1/endpoints/{name}.
type EndpointWithStats struct {
	EndpointJSON
	Stats EndpointStatsJSON `json:"stats"`
}

func statsJSON(s relay.EndpointStats) EndpointStatsJSON {
	out := EndpointStatsJSON{
		Queued: s.Queued, Retrying: s.Retrying, Running: s.Running, Slots: s.Slots,
		SlotsReleased: s.SlotsReleased, SlotsExpired: s.SlotsExpired, CompletedPerSec: s.CompletedPerSec,
		AvgDuration: s.AvgDuration.Seconds(), Rate: s.Rate, Totals: make(map[string]int64, len(s.Totals)),
	}
	for k, v := range s.Totals {
		out.Totals[string(k)] = v
	}
	positions := []int64{0, 10, 100, 1000}
	if s.Queued > 0 {
		positions = append(positions, s.Queued)
	}
	for _, n := range positions {
		e := ETAJSON{WaitNum: n}
		if d, ok := s.ETA(n); ok {
			v := d.Seconds()
			e.WaitTime = &v
		}
		out.ETA = append(out.ETA, e)
	}
	return out
}

// putEndpoint is PUT /v1/endpoints/{name}: creates or replaces an endpoint; every server
// instance applies it before the answer.
func (a *API) putEndpoint(w http.ResponseWriter, r *http.Request) error {
	var b EndpointBody
	if err := httpapi.DecodeBody(r, &b); err != nil {
		return err
	}
	e, err := EndpointParams(r.PathValue("name"), b)
	if err != nil {
		return err
	}
	if err := CheckTarget(r.Context(), e.TargetURL, a.cfg.AllowPrivateTargets); err != nil {
		return err
	}
	if e, err = a.relay.SetEndpoint(r.Context(), e); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, endpointJSON(e))
	return nil
}

// getEndpoint is GET /v1/endpoints/{name}, with live stats.
func (a *API) getEndpoint(w http.ResponseWriter, r *http.Request) error {
	s, err := a.relay.Stats(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, EndpointWithStats{EndpointJSON: endpointJSON(s.Endpoint), Stats: statsJSON(s)})
	return nil
}

// listEndpoints is GET /v1/endpoints: every endpoint (up to MaxEndpoints) with live stats.
func (a *API) listEndpoints(w http.ResponseWriter, r *http.Request) error {
	eps, err := a.relay.Endpoints(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Endpoints []EndpointWithStats `json:"endpoints"`
		Truncated bool                `json:"truncated,omitempty"`
	}{Endpoints: []EndpointWithStats{}}
	if len(eps) > a.cfg.MaxEndpoints {
		eps, out.Truncated = eps[:a.cfg.MaxEndpoints], true
	}
	for _, e := range eps {
		s, err := a.relay.Stats(r.Context(), e.Name)
		if err != nil {
			if httpapi.ErrorOf(r.Context(), err).Code == httpapi.CodeNotFound {
				continue // deleted meanwhile
			}
			return err
		}
		out.Endpoints = append(out.Endpoints, EndpointWithStats{EndpointJSON: endpointJSON(s.Endpoint), Stats: statsJSON(s)})
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// deleteEndpoint is DELETE /v1/endpoints/{name}: its waiting tasks are cancelled by maintenance.
func (a *API) deleteEndpoint(w http.ResponseWriter, r *http.Request) error {
	if err := a.relay.DeleteEndpoint(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
