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

// median returns the median of vals (the lower middle one for an even count), 0 for none.
func median(vals []int64) int64 {
	if len(vals) == 0 {
		return 0
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
