package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/callback"
)

// callbackMetrics turn the deliverer's events into metrics. Labels are bounded: namespaces are
// created by the admin, outcomes are the callback package's few; URLs are never labels.
type callbackMetrics struct {
	deliveries *prometheus.CounterVec
	duration   prometheus.Histogram
	lateness   prometheus.Histogram
}

func newCallbackMetrics(reg prometheus.Registerer) *callbackMetrics {
	m := &callbackMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_callback_deliveries_total",
			Help: "Callback tries by namespace and outcome (delivered, retried, dead, expired, released, lost).",
		}, []string{"namespace", "outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_callback_duration_seconds",
			Help:    "Time of a callback's HTTP call, from sending to the end of the response body.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_callback_lateness_seconds",
			Help:    "How long after its due time (by Redis's clock) a callback was sent.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	reg.MustRegister(m.deliveries, m.duration, m.lateness)
	return m
}

// observe is the deliverer's OnDelivery hook.
func (m *callbackMetrics) observe(ev callback.Event) {
	m.deliveries.WithLabelValues(ev.Namespace, string(ev.Outcome)).Inc()
	if ev.Duration > 0 {
		m.duration.Observe(ev.Duration.Seconds())
	}
	if ev.Outcome != callback.OutcomeReleased && ev.Lateness > 0 {
		m.lateness.Observe(ev.Lateness.Seconds())
	}
}
