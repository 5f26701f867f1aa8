package ui

import (
	"strconv"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// timesLive puts a queue's two time charts over a span into l: the processing time of the acks
// (p50 and p99 per slot) under key+":pt", and the oldest ready job's age (at each slot's end)
// under key+":age"; and the span's p50 and p99 over all its acks under key+":span".
func timesLive(l live, key string, s series) {
	durationChart(l, key+":pt", []durationLine{{"p50", s.P50}, {"p99", s.P99}})
	durationChart(l, key+":age", []durationLine{{"oldest", s.Oldest}})
	quantilesLive(l, key+":span", s.Acks)
}

// quantilesLive puts the p50 and p99 of acks into l ("–" without acks).
func quantilesLive(l live, key string, acks queue.ProcessingTimes) {
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		l[key+":"+q.name] = "–"
		if d, ok := acks.Quantile(q.q); ok {
			l[key+":"+q.name] = formatDuration(d)
		}
	}
}

// durationLine is one line of a time chart: its name in the live keys and its points (< 0: no
// data).
type durationLine struct {
	name string
	v    []time.Duration
}

// durationChart draws lines of durations as a chart's polylines under key: the y axis tops at a
// round number of milliseconds (1, 2 or 5 times a power of ten) above the highest point, and
// each line's latest point and peak go beside it, formatted.
func durationChart(l live, key string, lines []durationLine) {
	ms := make([]chartLine, len(lines))
	for i, ln := range lines {
		v := make([]int64, len(ln.v))
		for j, d := range ln.v {
			v[j] = -1
			if d >= 0 {
				v[j] = max(d.Milliseconds(), 1) // under a millisecond still shows above the axis
			}
		}
		ms[i] = chartLine{ln.name, v}
	}
	top := niceMax(highest(ms))
	l[key+":max"] = formatDuration(time.Duration(top) * time.Millisecond)
	l[key+":mid"] = formatDuration(time.Duration(top) * time.Millisecond / 2)
	for i, ln := range lines {
		l[key+":chart:"+ln.name] = polyline(ms[i].v, top)
		peak, latest := time.Duration(-1), time.Duration(-1)
		for _, d := range ln.v {
			if d >= 0 {
				peak, latest = max(peak, d), d
			}
		}
		l[key+":last:"+ln.name], l[key+":peak:"+ln.name] = formatDuration(latest), formatDuration(peak)
	}
}

// formatDuration writes a duration with two significant figures in ms, s, min or h ("–" when
// negative: no data).
func formatDuration(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	f := func(v float64, unit string) string {
		prec := 0
		if v < 10 {
			prec = 1
		}
		return strconv.FormatFloat(v, 'f', prec, 64) + " " + unit
	}
	switch {
	case d < time.Second:
		return f(float64(d)/float64(time.Millisecond), "ms")
	case d < time.Minute:
		return f(d.Seconds(), "s")
	case d < time.Hour:
		return f(d.Minutes(), "min")
	default:
		return f(d.Hours(), "h")
	}
}

// formatAge is formatDuration for the oldest ready job's age, which is "–" when no job is ready.
func formatAge(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return formatDuration(d)
}

// timeChartLine is a line of templates/_timechart.html: its live key, legend label and colour.
type timeChartLine struct{ Name, Label, Class string }

// timeChart is the data of templates/_timechart.html for one of a queue's time charts, which ("pt":
// processing time, "age": the oldest ready job), whose live keys start with key.
func timeChart(l live, key, which string, sp span) map[string]any {
	d := map[string]any{"l": l, "k": key + ":" + which, "sp": sp}
	if which == "pt" {
		d["id"], d["caption"] = "pt-chart", "Processing time of the acks (consume to ack), p50 and p99,"
		d["lines"] = []timeChartLine{{"p50", "p50", "s0"}, {"p99", "p99", "s2"}}
	} else {
		d["id"], d["caption"] = "age-chart", "Age of the oldest ready job (how long it has waited for a consumer)"
		d["lines"] = []timeChartLine{{"oldest", "oldest", "s1"}}
	}
	return d
}
