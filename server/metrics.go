package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/queue"
)

// metrics are the server's Prometheus metrics, on a registry of its own (no global state).
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	inflight    *prometheus.GaugeVec
	redisErrors prometheus.Counter
	rateLimited *prometheus.CounterVec
	callbacks   *callbackMetrics
	relayCalls  *prometheus.HistogramVec
	series      sync.Map // requestSeries -> *requestObservers
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_http_requests_total",
			Help: "HTTP requests by listener, route pattern and status code.",
		}, []string{"listener", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_http_request_duration_seconds",
			Help:    "HTTP request latency by listener and route pattern (blocking consumes include their wait).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"listener", "route"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_http_requests_in_flight",
			Help: "HTTP requests being served (blocked consumes included) by listener.",
		}, []string{"listener"}),
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_redis_errors_total",
			Help: "Requests and scrapes that failed because Redis was unreachable or refused the command.",
		}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rate_limited_total",
			Help: "Job requests refused (429) because their token's rate limit was reached, by namespace and direction (read: consume, write: publish).",
		}, []string{"namespace", "direction"}),
		relayCalls: newCallLatency(),
	}
	m.reg.MustRegister(m.requests, m.latency, m.inflight, m.redisErrors, m.rateLimited, m.relayCalls, &relayCollector{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&queueCollector{s: s, m: m}, &roomCollector{s: s, m: m})
	m.callbacks = newCallbackMetrics(m.reg)
	return m
}

func (m *metrics) observeRequest(listener, route string, status int, d time.Duration) {
	key := requestSeries{listener: listener, route: route, status: status}
	o, ok := m.series.Load(key)
	if !ok {
		// Bounded: listeners and route patterns are fixed at start, statuses are HTTP's few.
		o, _ = m.series.LoadOrStore(key, &requestObservers{
			count:   m.requests.WithLabelValues(listener, route, strconv.Itoa(status)),
			latency: m.latency.WithLabelValues(listener, route),
		})
	}
	obs := o.(*requestObservers) //nolint:forcetypeassert // only requestObservers are stored
	obs.count.Inc()
	obs.latency.Observe(d.Seconds())
}

// requestSeries names the request metrics' series of one listener, route and status;
// requestObservers are those series, looked up once instead of hashing labels on every request.
type requestSeries struct {
	listener, route string
	status          int
}

type requestObservers struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	descDepth = prometheus.NewDesc("sluice_queue_jobs",
		"Jobs in a queue by state (ready, delayed, leased, dead, done).",
		[]string{"namespace", "queue", "state"}, nil)
	descPaused = prometheus.NewDesc("sluice_queue_paused",
		"1 when the queue is paused.", []string{"namespace", "queue"}, nil)
	descJobs = prometheus.NewDesc("sluice_jobs_total",
		"Job events of a queue since it was created, counted in Redis by every instance "+
			"(published, consumed, acked, nacked, retried, dead_lettered, expired, deleted, released, respawned).",
		[]string{"namespace", "queue", "event"}, nil)
	descScrapeQueues = prometheus.NewDesc("sluice_metrics_queues",
		"Queues reported by this scrape (bounded by metrics_max_queues).", nil, nil)
	descScrapeTruncated = prometheus.NewDesc("sluice_metrics_queues_truncated",
		"1 when there were more queues than metrics_max_queues and some were left out.", nil, nil)
)

// queueCollector reads every queue's stats on scrape: one StatsMany pipeline per namespace, each
// stats call O(priorities) inside Redis, and at most MetricsMaxQueues queues.
type queueCollector struct {
	s *Server
	m *metrics
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDepth
	ch <- descPaused
	ch <- descJobs
	ch <- descScrapeQueues
	ch <- descScrapeTruncated
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	budget := c.s.cfg.MetricsMaxQueues
	reported, truncated := 0, false
	defer func() {
		ch <- prometheus.MustNewConstMetric(descScrapeQueues, prometheus.GaugeValue, float64(reported))
		t := 0.0
		if truncated {
			t = 1
		}
		ch <- prometheus.MustNewConstMetric(descScrapeTruncated, prometheus.GaugeValue, t)
	}()
	namespaces, err := c.s.queue.Namespaces(ctx)
	if err != nil {
		c.scrapeFailed(err)
		return
	}
	for _, ns := range namespaces {
		if budget == 0 {
			truncated = true
			return
		}
		queues, err := c.s.queue.Queues(ctx, ns)
		if err != nil {
			c.scrapeFailed(err)
			return
		}
		if len(queues) > budget {
			queues, truncated = queues[:budget], true
		}
		budget -= len(queues)
		stats, err := c.s.queue.StatsMany(ctx, ns, queues)
		if err != nil {
			c.scrapeFailed(err)
			return
		}
		for i, q := range queues {
			reported++
			emitStats(ch, ns, q, stats[i])
		}
	}
}

func (c *queueCollector) scrapeFailed(err error) {
	c.m.redisErrors.Inc()
	c.s.log.Warn("metrics scrape could not read queue stats", slog.Any("error", err))
}

func emitStats(ch chan<- prometheus.Metric, ns, q string, st queue.Stats) {
	gauge := func(state string, v int64) {
		ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, float64(v), ns, q, state)
	}
	gauge("ready", st.Ready)
	gauge("delayed", st.Delayed)
	gauge("leased", st.Leased)
	gauge("dead", st.Dead)
	gauge("done", st.Done)
	paused := 0.0
	if st.Paused {
		paused = 1
	}
	ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, paused, ns, q)
	for _, e := range []struct {
		name string
		v    int64
	}{
		{"published", st.Published}, {"consumed", st.Consumed}, {"acked", st.Acked}, {"nacked", st.Nacked},
		{"retried", st.Retried}, {"dead_lettered", st.DeadLettered}, {"expired", st.Expired},
		{"deleted", st.Deleted}, {"released", st.Released}, {"respawned", st.Respawned},
	} {
		ch <- prometheus.MustNewConstMetric(descJobs, prometheus.CounterValue, float64(e.v), ns, q, e.name)
	}
}
