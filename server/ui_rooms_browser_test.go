package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
)

// TestDashboardInChromiumRoom drives a room's page in a real headless Chromium: from the room list
// to the room, its upstream and settings shown, and its live chart plotting the line as visitors
// arrive, the y axis rescaling to the new highest value.
func TestDashboardInChromiumRoom(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	room := roomWithLine(t, ts, "http://shop.internal:8080/")
	b, s := openDashboard(t, ts)

	b.Navigate(ts.AdminURL + "/ui/rooms")
	b.Run(chromedp.Click(`a[href="/ui/rooms/sale"]`))
	waitText(t, b, "h1", "Room sale")
	waitText(t, b, "#room-upstream", "http://shop.internal:8080/")
	waitText(t, b, "#room-settings", "admits 1 at once, at most 60 admitted a minute")
	waitText(t, b, `[data-live="room/sale:waiting"]`, "2")

	// line returns the chart's points for the line (x,y pairs) once it has at least n.
	line := func(n int) [][2]float64 {
		t.Helper()
		var pts [][2]float64
		b.WaitUntil(time.Minute, func() error {
			raw := browsertest.Eval[string](b, `document.querySelector('[data-line="room/sale:waiting"]').getAttribute("points")`)
			pts = pts[:0]
			for _, p := range strings.Fields(raw) {
				x, y, _ := strings.Cut(p, ",")
				fx, _ := strconv.ParseFloat(x, 64)
				fy, _ := strconv.ParseFloat(y, 64)
				pts = append(pts, [2]float64{fx, fy})
			}
			if len(pts) < n {
				return fmt.Errorf("the chart has %d points of the line, want %d", len(pts), n)
			}
			return nil
		})
		return pts
	}
	before := line(2)
	waitText(t, b, `#room-chart [data-axis="max"]`, "2")
	waitText(t, b, `#room-chart [data-axis="start"]`, "−60 s") // a young chart spans its first minute
	s.shot(t, "room")

	for i := range 5 {
		if _, err := room.Arrive(ctxT(t), fmt.Sprintf("late%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitText(t, b, `[data-live="room/sale:waiting"]`, "7")
	waitText(t, b, `#room-chart [data-axis="max"]`, "10")
	after := line(len(before) + 1)
	first, last := after[0], after[len(after)-1]
	if last[0] <= first[0] || last[1] >= first[1] {
		t.Fatalf("the line does not rise to the right as the line grows: first %v, last %v", first, last)
	}
}
