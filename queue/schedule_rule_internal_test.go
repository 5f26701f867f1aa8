package queue

import (
	"testing"
	"time"
)

func mustRule(t *testing.T, expr, zone string) scheduleRule {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatalf("LoadLocation(%s): %v", zone, err)
	}
	spec, err := parseCron(expr)
	if err != nil {
		t.Fatalf("parseCron(%q): %v", expr, err)
	}
	return scheduleRule{spec: spec, loc: loc}
}

// ticks lists the ticks of r after from up to to, in UTC.
func ticks(r scheduleRule, from, to time.Time) []string {
	var out []string
	for t := r.next(from); !t.IsZero() && !t.After(to); t = r.next(t) {
		out = append(out, t.UTC().Format(time.RFC3339))
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCronAcrossDaylightSavingTransitions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, expr, zone, from, to string
		want                       []string
	}{
		{
			// 2026-03-08: New York's clocks go from 02:00 EST to 03:00 EDT. 02:30 does not exist that
			// day: it fires once, at 03:30 EDT (07:30 UTC); the days around fire at 02:30 local.
			name: "New York spring-forward", expr: "30 2 * * *", zone: "America/New_York",
			from: "2026-03-07T00:00:00Z", to: "2026-03-10T00:00:00Z",
			want: []string{"2026-03-07T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"},
		},
		{
			// 2026-11-01: New York's clocks go from 02:00 EDT back to 01:00 EST; 01:30 happens twice
			// (05:30 and 06:30 UTC) and fires once, at the first.
			name: "New York fall-back", expr: "30 1 * * *", zone: "America/New_York",
			from: "2026-10-31T00:00:00Z", to: "2026-11-03T00:00:00Z",
			want: []string{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		},
		{
			// 2026-03-29: Berlin goes from 02:00 CET to 03:00 CEST; 02:15 fires at 03:15 CEST.
			name: "Berlin spring-forward", expr: "15 2 * * *", zone: "Europe/Berlin",
			from: "2026-03-28T00:00:00Z", to: "2026-03-31T00:00:00Z",
			want: []string{"2026-03-28T01:15:00Z", "2026-03-29T01:15:00Z", "2026-03-30T00:15:00Z"},
		},
		{
			// 2026-10-25: Berlin goes from 03:00 CEST back to 02:00 CET; 02:15 happens twice (00:15 and
			// 01:15 UTC) and fires once.
			name: "Berlin fall-back", expr: "15 2 * * *", zone: "Europe/Berlin",
			from: "2026-10-24T00:00:00Z", to: "2026-10-27T00:00:00Z",
			want: []string{"2026-10-24T00:15:00Z", "2026-10-25T00:15:00Z", "2026-10-26T01:15:00Z"},
		},
		{
			// Hourly across New York's fall-back: each wall-clock hour fires once, so the repeated
			// 01:00 does not fire a second time (05:00 UTC is 01:00 EDT, 07:00 UTC is 02:00 EST).
			name: "New York hourly fall-back", expr: "@hourly", zone: "America/New_York",
			from: "2026-11-01T03:30:00Z", to: "2026-11-01T08:00:00Z",
			want: []string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"},
		},
		{
			// Every 30 minutes across Berlin's spring-forward: 02:00 and 02:30 do not exist and fold onto
			// 03:00 and 03:30 CEST, each of which fires once.
			name: "Berlin half-hourly spring-forward", expr: "*/30 * * * *", zone: "Europe/Berlin",
			from: "2026-03-29T00:15:00Z", to: "2026-03-29T02:00:00Z",
			want: []string{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := ticks(mustRule(t, c.expr, c.zone), utc(c.from), utc(c.to))
			if !equalStrings(got, c.want) {
				t.Errorf("ticks = %v, want %v", got, c.want)
			}
		})
	}
}

func TestCronWithSecondsAndNames(t *testing.T) {
	t.Parallel()
	r := mustRule(t, "*/20 * * * * *", "UTC")
	got := ticks(r, utc("2026-01-01T00:00:00Z"), utc("2026-01-01T00:01:00Z"))
	want := []string{"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z"}
	if !equalStrings(got, want) {
		t.Errorf("six fields: %v, want %v", got, want)
	}
	for _, bad := range []string{"@every 1m", "TZ=UTC * * * * *", "61 * * * *", "* * *", "not cron"} {
		if _, err := parseCron(bad); err == nil {
			t.Errorf("parseCron(%q) accepted", bad)
		}
	}
}

func TestEveryTicksAreMultiplesOfThePeriodWithinStartAndEnd(t *testing.T) {
	t.Parallel()
	r := scheduleRule{every: 30 * time.Second, loc: time.UTC}
	got := ticks(r, utc("2026-01-01T00:00:10Z"), utc("2026-01-01T00:01:00Z"))
	if want := []string{"2026-01-01T00:00:30Z", "2026-01-01T00:01:00Z"}; !equalStrings(got, want) {
		t.Errorf("every 30s: %v, want %v", got, want)
	}
	r.start, r.end = utc("2026-01-01T00:00:05Z"), utc("2026-01-01T00:01:10Z")
	got = ticks(r, utc("2026-01-01T00:00:00Z"), utc("2026-01-01T01:00:00Z"))
	if want := []string{"2026-01-01T00:00:05Z", "2026-01-01T00:00:35Z", "2026-01-01T00:01:05Z"}; !equalStrings(got, want) {
		t.Errorf("every 30s from start to end: %v, want %v", got, want)
	}
}

func TestPlanTicksAppliesTheCatchUpPolicy(t *testing.T) {
	t.Parallel()
	r := scheduleRule{every: time.Minute, loc: time.UTC}
	now := utc("2026-01-01T10:00:05Z")
	from := utc("2026-01-01T09:50:00Z") // ticks 09:50 .. 10:00: ten missed, 10:00 on time
	grace := 10 * time.Second
	for _, c := range []struct {
		policy    CatchUp
		fired     int
		firstFire string
		missed    int64
	}{
		{CatchUpSkip, 1, "2026-01-01T10:00:00Z", 10},
		{CatchUpOne, 2, "2026-01-01T09:59:00Z", 9},
		{CatchUpAll, 11, "2026-01-01T09:50:00Z", 0},
	} {
		p := planTicks(r, from, now, now, c.policy, grace)
		if len(p.fire) != c.fired || p.missed != c.missed {
			t.Errorf("%s: fired %d, missed %d; want %d, %d", c.policy, len(p.fire), p.missed, c.fired, c.missed)
			continue
		}
		if got := p.fire[0].UTC().Format(time.RFC3339); got != c.firstFire {
			t.Errorf("%s: first fire %s, want %s", c.policy, got, c.firstFire)
		}
		if got := p.next.UTC().Format(time.RFC3339); got != "2026-01-01T10:01:00Z" {
			t.Errorf("%s: next %s, want 10:01", c.policy, got)
		}
	}
	// All is bounded: the newest MaxCatchUp missed ticks fire (maxFiresPerCall per call), the rest
	// are counted missed.
	r = scheduleRule{every: time.Second, loc: time.UTC}
	p := planTicks(r, now.Add(-2*time.Hour), now, now, CatchUpAll, grace)
	if len(p.fire) != maxFiresPerCall || !p.next.Before(now) {
		t.Errorf("all after two hours: fired %d, next %s; want %d and more due", len(p.fire), p.next, maxFiresPerCall)
	}
	if want := int64(2*3600 - 10 - MaxCatchUp); p.missed != want {
		t.Errorf("all after two hours: missed %d, want %d", p.missed, want)
	}
}
