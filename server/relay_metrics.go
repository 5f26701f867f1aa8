package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/relay"
)

// The request queue's metrics. Endpoint names are labels: the admin defines them, so they are
// bounded (and a scrape reports at most MetricsMaxQueues endpoints).
var (
	descRelayTasks = prometheus.NewDesc("sluice_relay_tasks",
		"Tasks of an endpoint now, by state: queued (waiting for their turn), retrying (waiting out a retry backoff), running (concurrency slots taken: task calls in flight, permits out and callback calls under the endpoint's target URL).",
		[]string{"endpoint", "state"}, nil)
	descRelayEnded = prometheus.NewDesc("sluice_relay_tasks_ended_total",
		"Tasks of an endpoint that ended, by final status (completed, failed, cancelled, timeout), over the endpoint's life.",
		[]string{"endpoint", "status"}, nil)
	descRelaySlots = prometheus.NewDesc("sluice_relay_callback_slots",
		"Concurrency slots of an endpoint held now by callback calls under its target URL (part of sluice_relay_tasks{state=\"running\"}).",
		[]string{"endpoint"}, nil)
	descRelaySlotsEnded = prometheus.NewDesc("sluice_relay_callback_slots_total",
		"Callback calls under an endpoint's target URL that freed their slot, by how (released after the call, expired: the deliverer died or hung), over the endpoint's life.",
		[]string{"endpoint", "how"}, nil)
	descRelayRate = prometheus.NewDesc("sluice_relay_completed_per_second",
		"Task calls of an endpoint finished per second over the last 10s (the measured rate ETAs use; callback calls are not in it).",
		[]string{"endpoint"}, nil)
	descRelayWait = prometheus.NewDesc("sluice_relay_wait_seconds_estimate",
		"Estimated wait of a task submitted now to an endpoint (absent while it cannot be estimated).",
		[]string{"endpoint"}, nil)
	descRelayLimit = prometheus.NewDesc("sluice_relay_endpoint_limit",
		"An endpoint's configured limits: qps and concurrency.",
		[]string{"endpoint", "limit"}, nil)
)

// newCallLatency is the latency of offline calls this instance made, by endpoint and outcome
// (success, retry, final).
func newCallLatency() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sluice_relay_call_duration_seconds",
		Help:    "Offline calls this instance made to an endpoint, by outcome (success, retry, final).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"endpoint", "outcome"})
}

// observeCall is the dispatcher's OnCall hook.
func (m *metrics) observeCall(e relay.CallEvent) {
	m.relayCalls.WithLabelValues(e.Endpoint, e.Outcome.String()).Observe(e.Duration.Seconds())
}

var relayDescs = []*prometheus.Desc{descRelayTasks, descRelayEnded, descRelaySlots, descRelaySlotsEnded, descRelayRate, descRelayWait, descRelayLimit}

// collectRelay reads each endpoint's live stats on scrape: one read-only script per endpoint,
// O(1) inside Redis (counters, cardinalities and a 60-entry ring), at most MetricsMaxQueues.
func (s *Server) collectRelay(ctx context.Context, ch chan<- prometheus.Metric) {
	if s.relay == nil {
		return
	}
	eps, err := s.relay.Endpoints(ctx)
	if err != nil {
		s.scrapeFailed("endpoint stats", err)
		return
	}
	if len(eps) > s.cfg.MetricsMaxQueues {
		eps = eps[:s.cfg.MetricsMaxQueues]
	}
	for _, e := range eps {
		st, err := s.relay.Stats(ctx, e.Name)
		if err != nil {
			s.scrapeFailed("endpoint stats", err)
			return
		}
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{e.Name}, labels...)...)
		}
		gauge(descRelayTasks, float64(st.Queued), "queued")
		gauge(descRelayTasks, float64(st.Retrying), "retrying")
		gauge(descRelayTasks, float64(st.Running), "running")
		for _, status := range []relay.Status{relay.StatusCompleted, relay.StatusFailed, relay.StatusCancelled, relay.StatusTimeout} {
			ch <- prometheus.MustNewConstMetric(descRelayEnded, prometheus.CounterValue, float64(st.Totals[status]), e.Name, string(status))
		}
		gauge(descRelaySlots, float64(st.Slots))
		ch <- prometheus.MustNewConstMetric(descRelaySlotsEnded, prometheus.CounterValue, float64(st.SlotsReleased), e.Name, "released")
		ch <- prometheus.MustNewConstMetric(descRelaySlotsEnded, prometheus.CounterValue, float64(st.SlotsExpired), e.Name, "expired")
		gauge(descRelayRate, st.CompletedPerSec)
		if d, ok := st.ETA(st.Queued); ok {
			gauge(descRelayWait, d.Seconds())
		}
		gauge(descRelayLimit, st.Endpoint.QPS, "qps")
		gauge(descRelayLimit, float64(st.Endpoint.Concurrency), "concurrency")
	}
}
