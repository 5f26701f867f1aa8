package waitroom

import (
	"testing"
	"time"
)

// TestRoomETABeforeHistory: the measured pace wins; before there is one the ETA goes by
// new_users_per_minute, else by max_active places freed once a session_timeout.
func TestRoomETABeforeHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		cfg                RoomConfig
		position           int
		admitted, windowMs int64
		want               time.Duration
		known              bool
	}{
		{"measured", RoomConfig{MaxActive: 10, NewUsersPerMinute: 600, SessionTimeout: time.Minute}, 30, 60, 60_000, 30 * time.Second, true},
		{"inflow limit", RoomConfig{MaxActive: 10, NewUsersPerMinute: 120, SessionTimeout: time.Minute}, 30, 0, 0, 15 * time.Second, true},
		{"places per session", RoomConfig{MaxActive: 10, SessionTimeout: 5 * time.Minute}, 30, 0, 0, 15 * time.Minute, true},
		{"not in line", RoomConfig{MaxActive: 10, SessionTimeout: 5 * time.Minute}, 0, 0, 0, 0, false},
	} {
		got, known := roomETA(tc.cfg, tc.position, tc.admitted, tc.windowMs)
		if got != tc.want || known != tc.known {
			t.Errorf("%s: roomETA = %s, %v; want %s, %v", tc.name, got, known, tc.want, tc.known)
		}
	}
}
