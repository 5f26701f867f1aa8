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
	// authFailures counts wrong credentials, authRefused the requests answered 429 auth_backoff,
	// by kind (dashboard, admin, token: authguard.Kind, a bounded label).
	authFailures *prometheus.CounterVec
	authRefused  *prometheus.CounterVec
	callbacks    *callbackMetrics
	relayCalls   *prometheus.HistogramVec
	series       sync.Map // requestSeries -> *requestObservers
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
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_auth_failures_total",
			Help: "Failed authentications (a wrong dashboard login, admin token or namespace token) by kind: dashboard, admin, token.",
		}, []string{"kind"}),
		authRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_auth_backoff_total",
			Help: "Requests answered 429 auth_backoff because their client address made too many failed authentications, by kind.",
		}, []string{"kind"}),
		relayCalls: newCallLatency(),
	}
	m.reg.MustRegister(m.requests, m.latency, m.inflight, m.redisErrors, m.rateLimited, m.authFailures, m.authRefused, m.relayCalls,
		scrapeCollector{descs: relayDescs, collect: s.collectRelay},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		scrapeCollector{descs: queueDescs, collect: s.collectQueues},
		scrapeCollector{descs: roomDescs, collect: s.collectRooms},
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_http_lean_requests_total",
			Help: "Requests of proxy_rooms that the public listener's lean loop served (also counted in sluice_http_requests_total).",
		}, func() float64 { return float64(s.leanStats().LeanRequests) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_http_handed_off_connections_total",
			Help: "Public connections the lean loop handed to net/http (a request it does not serve, and the rest of its connection).",
		}, func() float64 { return float64(s.leanStats().HandedOff) }))
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

// scrapeTimeout bounds the Redis reads of one scrape collector.
const scrapeTimeout = 5 * time.Second

// scrapeCollector reports figures that collect reads from Redis on each scrape (the queues', the
// rooms', the endpoints'), within scrapeTimeout.
type scrapeCollector struct {
	descs   []*prometheus.Desc
	collect func(ctx context.Context, ch chan<- prometheus.Metric)
}

func (c scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	c.collect(ctx, ch)
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

var queueDescs = []*prometheus.Desc{descDepth, descPaused, descJobs, descScrapeQueues, descScrapeTruncated}

// collectQueues reads every queue's stats on scrape: one StatsMany pipeline per namespace, each
// stats call O(priorities) inside Redis, and at most MetricsMaxQueues queues.
func (s *Server) collectQueues(ctx context.Context, ch chan<- prometheus.Metric) {
	budget := s.cfg.MetricsMaxQueues
	reported, truncated := 0, false
	defer func() {
		ch <- prometheus.MustNewConstMetric(descScrapeQueues, prometheus.GaugeValue, float64(reported))
		t := 0.0
		if truncated {
			t = 1
		}
		ch <- prometheus.MustNewConstMetric(descScrapeTruncated, prometheus.GaugeValue, t)
	}()
	namespaces, err := s.queue.Namespaces(ctx)
	if err != nil {
		s.scrapeFailed("queue stats", err)
		return
	}
	for _, ns := range namespaces {
		if budget == 0 {
			truncated = true
			return
		}
		queues, err := s.queue.Queues(ctx, ns)
		if err != nil {
			s.scrapeFailed("queue stats", err)
			return
		}
		if len(queues) > budget {
			queues, truncated = queues[:budget], true
		}
		budget -= len(queues)
		stats, err := s.queue.StatsMany(ctx, ns, queues)
		if err != nil {
			s.scrapeFailed("queue stats", err)
			return
		}
		for i, q := range queues {
			reported++
			emitStats(ch, ns, q, stats[i])
		}
	}
}

// scrapeFailed counts and logs a scrape that could not read what from Redis.
func (s *Server) scrapeFailed(what string, err error) {
	s.metrics.redisErrors.Inc()
	s.log.Warn("metrics scrape could not read "+what, slog.Any("error", err))
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
