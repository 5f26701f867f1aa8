package relay

import (
	"testing"
	"time"
)

// The ETA is the later of the two limits' bounds: the concurrency slots' (tasks that free slots
// let start go now, the rest at the slots' rate) and the rate limit's (the next token, then one
// interval per task ahead, as dispatchers space calls).
func TestETAIsTheLaterOfBothLimits(t *testing.T) {
	t.Parallel()
	slow := Endpoint{Concurrency: 2, QPS: 10}    // interval 100.8 ms
	fast := Endpoint{Concurrency: 2, QPS: 2_000} // a burst of 2: the first token may be 1 interval behind
	iv := func(e Endpoint, n float64) time.Duration {
		return time.Duration(n * float64(time.Second) / spacedQPS(e))
	}
	for _, c := range []struct {
		name  string
		e     Endpoint
		l     limits
		ahead int64
		want  time.Duration
		known bool
	}{
		{"free slot, token due now", slow, limits{rate: 1}, 0, 0, true},
		{"free slots, the rate spaces them", slow, limits{rate: 1}, 1, iv(slow, 1), true},
		{"token spent: wait for the next", slow, limits{rate: 1, nextToken: 60 * time.Millisecond}, 0, 60 * time.Millisecond, true},
		{"token spent, two ahead", slow, limits{rate: 100, nextToken: 60 * time.Millisecond}, 2, 60*time.Millisecond + iv(slow, 2), true},
		{"overdue token counts as now", slow, limits{rate: 1, nextToken: -time.Second}, 1, iv(slow, 1), true},
		{"slots bind: 1 task per second", slow, limits{running: 2, rate: 1}, 2, 3 * time.Second, true},
		{"slots unknown, the rate tells", slow, limits{running: 2}, 3, iv(slow, 3), true},
		{"burst: two tokens at once", fast, limits{rate: 1e6, nextToken: -time.Second}, 1, 0, true},
		{"no rate limit, slots unknown", Endpoint{Concurrency: 1}, limits{running: 1}, 0, 0, false},
		{"no rate limit, a free slot", Endpoint{Concurrency: 1}, limits{}, 0, 0, true},
	} {
		got, known := c.l.eta(c.e, c.ahead)
		if got != c.want || known != c.known {
			t.Errorf("%s: eta = %s %v, want %s %v", c.name, got, known, c.want, c.known)
		}
	}
}
