package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The queue chart's plot area in its SVG's viewBox (0 0 320 110), the same as a room's live chart
// (templates/_chart.html draws the axes at these lines).
const (
	chartX0, chartX1 = 40.0, 315.0
	chartY0, chartY1 = 95.0, 8.0
)

// Unit is what a point of the span counts: jobs per minute or per daySlot.
func (sp span) Unit() string {
	if sp.slot == hourSpan.slot {
		return "min"
	}
	return strconv.Itoa(int(sp.slot.Minutes())) + " min"
}

// Ticks are the x axis's labels: the start, the middle and the end of the span.
func (sp span) Ticks() [3]string {
	if sp.Name == daySpan.Name {
		return [3]string{"−24 h", "−12 h", "now"}
	}
	return [3]string{"−60 min", "−30 min", "now"}
}

// chartLive puts a queue's chart over a span into l: a line per counter (published, acked,
// failed), the y axis's top (a round number of jobs per slot), and each line's total and peak for
// the legend, so the numbers beside the chart are those it draws.
func chartLive(l live, key string, s series, sp span) {
	lines := []chartLine{{"pub", s.Published}, {"ack", s.Acked}, {"fail", s.Failed}}
	top := niceMax(highest(lines))
	l[key+":chart:max"] = strconv.FormatInt(top, 10)
	l[key+":chart:mid"] = strconv.FormatFloat(float64(top)/2, 'f', -1, 64)
	for _, ln := range lines {
		var sum, peak int64
		for _, v := range ln.v {
			sum += max(v, 0)
			peak = max(peak, v)
		}
		l[key+":chart:"+ln.name] = polyline(ln.v, top)
		l[key+":sum:"+ln.name] = strconv.FormatInt(sum, 10)
		l[key+":peak:"+ln.name] = strconv.FormatInt(peak, 10)
	}
}

// chartLine is one line of a chart: its name in the live keys and its points (< 0: no data).
type chartLine struct {
	name string
	v    []int64
}

// highest is the highest point of the lines.
func highest(lines []chartLine) int64 {
	top := int64(0)
	for _, ln := range lines {
		for _, v := range ln.v {
			top = max(top, v)
		}
	}
	return top
}

// polyline is the points of an SVG polyline drawing v in the chart's plot area with top at its
// upper edge; a point without data is left out, so the line joins its neighbours.
func polyline(v []int64, top int64) string {
	var b strings.Builder
	for i, y := range v {
		if y < 0 {
			continue
		}
		x := chartX0 + (chartX1-chartX0)*float64(i)/float64(max(len(v)-1, 1))
		py := chartY0 - (chartY0-chartY1)*float64(y)/float64(max(top, 1))
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, py)
	}
	return b.String()
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten (at least 1), a y axis's top.
func niceMax(v int64) int64 {
	if v <= 1 {
		return 1
	}
	p := int64(math.Pow(10, math.Floor(math.Log10(float64(v)))))
	for _, m := range []int64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// failureRate is the share of finished deliveries that failed over a series ("–" when none
// finished or the failures are unknown), for the overview's failure-rate column.
func failureRate(s series) string {
	var acked, failed int64
	for i := range s.Acked {
		if s.Acked[i] < 0 || s.Failed[i] < 0 {
			continue
		}
		acked += s.Acked[i]
		failed += s.Failed[i]
	}
	if acked+failed == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*float64(failed)/float64(acked+failed), 'f', 1, 64) + "%"
}
