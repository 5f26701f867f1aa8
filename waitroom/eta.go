package waitroom

import (
	"slices"
	"time"
)

// eta estimates the wait of the visitor at position from the room's measured admission rate:
// admitted visitors over the last minutes (lua/lib.lua: recent), window ms long. The line moves
// at that rate, so position visitors take position / rate. Unknown (false) before anyone was
// admitted in the window or when the window is under a second long (too short to be a rate).
func eta(position int, admitted, windowMs int64) (time.Duration, bool) {
	if admitted <= 0 || windowMs < 1000 || position < 1 {
		return 0, false
	}
	ms := float64(position) * float64(windowMs) / float64(admitted)
	if ms > float64(maxTimeout/time.Millisecond)*30 {
		return 0, false // a rate that slow says nothing about this line
	}
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Second), true
}

// roomETA is the ETA the page shows: from the measured rate (eta) once the room has admitted
// visitors from the line recently, else from the settings: new_users_per_minute when the room
// limits its inflow (in a rush the limit is the pace), else max_active places each freed once a
// session_timeout (the pace when every visitor stays until the idle timeout: an upper bound of the
// wait, which the measured rate replaces after the first admission from the line).
func roomETA(cfg RoomConfig, position int, admitted, windowMs int64) (time.Duration, bool) {
	if d, ok := eta(position, admitted, windowMs); ok {
		return d, true
	}
	if cfg.NewUsersPerMinute > 0 {
		return eta(position, int64(cfg.NewUsersPerMinute), time.Minute.Milliseconds())
	}
	if cfg.MaxActive > 0 && cfg.SessionTimeout > 0 {
		return eta(position, int64(cfg.MaxActive), cfg.SessionTimeout.Milliseconds())
	}
	return 0, false
}

// median returns the median of vals (the lower middle one for an even count), 0 for none.
func median(vals []int64) int64 {
	if len(vals) == 0 {
		return 0
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
