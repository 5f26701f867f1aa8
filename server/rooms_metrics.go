package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// maxMetricRooms bounds the rooms a /metrics scrape reports (labels stay bounded).
const maxMetricRooms = 1000

var (
	descRoomVisitors = prometheus.NewDesc("sluice_room_visitors",
		"Visitors of a waiting room by state (active: holding a slot; waiting: in line).",
		[]string{"room", "state"}, nil)
	descRoomMaxActive = prometheus.NewDesc("sluice_room_max_active",
		"A waiting room's max_active setting.", []string{"room"}, nil)
	descRoomEvents = prometheus.NewDesc("sluice_room_visitors_total",
		"Waiting room events since the room was created or reset, counted in Redis by every instance "+
			"(admitted, abandoned: left the line without polling, released, expired: slot freed by idle timeout).",
		[]string{"room", "event"}, nil)
	descRoomAdmitRate = prometheus.NewDesc("sluice_room_admitted_per_minute",
		"Admissions per minute over the last minutes: the rate the ETA is computed from.", []string{"room"}, nil)
	descRoomMedianWait = prometheus.NewDesc("sluice_room_median_wait_seconds",
		"Median wait in line of the latest (up to 101) admissions.", []string{"room"}, nil)

	descRoomBypassed = prometheus.NewDesc("sluice_room_bypassed_total",
		"Requests this instance let past a waiting room by its bypass rules (paths, user agents, staff secret).",
		[]string{"room"}, nil)
)

var roomDescs = []*prometheus.Desc{descRoomVisitors, descRoomMaxActive, descRoomEvents, descRoomAdmitRate, descRoomMedianWait, descRoomBypassed}

// collectRooms reads every room's live figures on scrape: one read-only script call per room,
// O(1) inside Redis, at most maxMetricRooms rooms.
func (s *Server) collectRooms(ctx context.Context, ch chan<- prometheus.Metric) {
	wr := s.waitroom
	names, err := wr.Rooms(ctx)
	if err != nil {
		s.metrics.redisErrors.Inc()
		return
	}
	if len(names) > maxMetricRooms {
		names = names[:maxMetricRooms]
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, name := range names {
		room, err := wr.Room(name)
		if err != nil {
			continue
		}
		st, err := room.Stats(ctx)
		if err != nil {
			continue // deleted meanwhile, or Redis failed: the room is left out of this scrape
		}
		gauge(descRoomVisitors, float64(st.Active), name, "active")
		gauge(descRoomVisitors, float64(st.Waiting), name, "waiting")
		gauge(descRoomMaxActive, float64(st.MaxActive), name)
		gauge(descRoomAdmitRate, st.AdmittedPerMinute, name)
		gauge(descRoomMedianWait, st.MedianWait.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(descRoomBypassed, prometheus.CounterValue, float64(room.Counters().Bypassed), name)
		for event, n := range map[string]int64{"admitted": st.Admitted, "abandoned": st.Abandoned, "released": st.Released, "expired": st.Expired} {
			ch <- prometheus.MustNewConstMetric(descRoomEvents, prometheus.CounterValue, float64(n), name, event)
		}
	}
}
