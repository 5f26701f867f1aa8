package queue

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads the cron field of a schedule: five fields (minute first), or six with seconds
// first, and the @yearly, @monthly, @weekly, @daily (@midnight) and @hourly names. "@every" and a
// TZ= prefix are refused before parsing: a schedule says those with its every and timezone fields.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month |
	cron.Dow | cron.Descriptor)

// scheduleRule computes the ticks of a schedule: the times of its cron expression in its time zone,
// or every multiple of its period since its start (since the Unix epoch without one), within its
// start and end.
type scheduleRule struct {
	spec       *cron.SpecSchedule // nil: an every rule
	loc        *time.Location
	every      time.Duration
	start, end time.Time // zero: none
}

// parseCron parses a cron expression for a rule in loc.
func parseCron(expr string) (*cron.SpecSchedule, error) {
	trimmed := strings.TrimSpace(expr)
	if strings.HasPrefix(trimmed, "@every") {
		return nil, errString("use the every field for a fixed period")
	}
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, errString("use the timezone field for the time zone")
	}
	s, err := cronParser.Parse(trimmed)
	if err != nil {
		return nil, err
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, errString("not a cron expression")
	}
	// The expression is evaluated on wall-clock times written as UTC (see nextCron).
	spec.Location = time.UTC
	return spec, nil
}

type errString string

func (e errString) Error() string { return string(e) }

// next is the first tick strictly after t, or the zero time when there is none (past the end, or
// an expression no date matches, such as 30 February).
func (r scheduleRule) next(t time.Time) time.Time {
	n := r.nextUnbounded(t)
	if !r.start.IsZero() && !n.IsZero() && n.Before(r.start) {
		n = r.nextUnbounded(r.start.Add(-time.Nanosecond))
	}
	if n.IsZero() || (!r.end.IsZero() && n.After(r.end)) {
		return time.Time{}
	}
	return n
}

func (r scheduleRule) nextUnbounded(t time.Time) time.Time {
	if r.spec == nil {
		return r.nextEvery(t)
	}
	return r.nextCron(t)
}

// nextEvery is the first multiple of every since the anchor (start, or the Unix epoch) after t.
func (r scheduleRule) nextEvery(t time.Time) time.Time {
	anchor := r.start
	if anchor.IsZero() {
		anchor = time.Unix(0, 0)
	}
	if t.Before(anchor) {
		return anchor
	}
	k := t.Sub(anchor)/r.every + 1
	return anchor.Add(k * r.every)
}

// nextCron is the first time after t that the expression names on the wall clock of the rule's
// zone. The expression is matched against wall-clock times (written as UTC, where no time is
// skipped or repeated), and each match becomes an instant in the zone (instantOf): a wall time
// that a spring-forward skips fires once, at the same time past the gap (02:30 on a day clocks go
// from 02:00 to 03:00 fires at 03:30); a wall time that a fall-back repeats fires once, at its
// first occurrence. A match whose instant is not after t (wall times the gap folded onto ones
// already passed) is skipped, so no instant fires twice.
func (r scheduleRule) nextCron(t time.Time) time.Time {
	w := t.In(r.loc)
	wall := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)
	// A repeated hour at one match a second is 3,600 matches folded onto instants already passed.
	for range 4000 {
		wall = r.spec.Next(wall)
		if wall.IsZero() {
			return time.Time{}
		}
		if at := instantOf(wall, r.loc); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// instantOf is the instant at which loc's clocks show wall (a wall-clock time written as UTC): the
// first one when they show it twice (a fall-back), and, when they never show it (a spring-forward
// gap), the instant as far past the gap's start as wall is, that is wall moved forward by the gap.
// It relies on no zone changing its offset twice within two days.
func instantOf(wall time.Time, loc *time.Location) time.Time {
	secs := wall.Unix()
	_, before := time.Unix(secs-86400, 0).In(loc).Zone()
	_, after := time.Unix(secs+86400, 0).In(loc).Zone()
	var best time.Time
	for _, off := range []int{before, after} {
		at := time.Unix(secs-int64(off), int64(wall.Nanosecond())).In(loc)
		if _, o := at.Zone(); o == off && (best.IsZero() || at.Before(best)) {
			best = at
		}
	}
	if best.IsZero() {
		best = time.Unix(secs-int64(before), int64(wall.Nanosecond())).In(loc)
	}
	return best
}
