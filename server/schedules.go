package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/queue"
)

// scheduleMetrics turn the scheduler's fires into metrics. The namespace label is bounded
// (namespaces are created by the admin); schedule names are not labels.
type scheduleMetrics struct {
	// fires counts the jobs published and missed the ticks skipped, by namespace.
	fires, missed *prometheus.CounterVec
	lateness      prometheus.Histogram
}

func newScheduleMetrics(reg prometheus.Registerer) *scheduleMetrics {
	byNamespace := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"namespace"})
	}
	m := &scheduleMetrics{
		fires:  byNamespace("sluice_schedule_fires_total", "Jobs published by schedule ticks, by namespace (this instance's scheduler)."),
		missed: byNamespace("sluice_schedule_missed_total", "Schedule ticks not fired (skipped by their catch-up policy, or due past the namespace's storage quota), by namespace."),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sluice_schedule_lateness_seconds", Help: "How long after its tick (by Redis's clock) a schedule's job was published.",
			Buckets: prometheus.ExponentialBucketsRange(0.001, 60, 16),
		}),
	}
	reg.MustRegister(m.fires, m.missed, m.lateness)
	return m
}

// observe is the scheduler's OnFire hook.
func (m *scheduleMetrics) observe(ev queue.FireEvent) {
	if ev.Jobs > 0 {
		m.fires.WithLabelValues(ev.Namespace).Add(float64(ev.Jobs))
		m.lateness.Observe(max(ev.Lateness, 0).Seconds())
	}
	if ev.Missed > 0 {
		m.missed.WithLabelValues(ev.Namespace).Add(float64(ev.Missed))
	}
}

// newScheduler is the server's scheduler: every instance runs one, with no leader (each tick is
// fired once whichever instance gets to it).
func (s *Server) newScheduler() *queue.Scheduler {
	m := newScheduleMetrics(s.metrics.reg)
	return queue.NewScheduler(s.queue, queue.SchedulerConfig{OnFire: m.observe, Logger: s.log})
}
