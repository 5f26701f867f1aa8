package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

func TestScheduleCommands(t *testing.T) {
	t.Parallel()
	f := setup(t)
	wantOut(t, f.must(t, "schedule", "set", "beat", "beats", "--every", "1s", "--attr", "team=ops", `{"n":1}`),
		"schedule shop/beat set; next run 20")
	wantOut(t, f.must(t, "schedule", "set", "nightly", "reports", "--cron", "0 2 * * *", "--timezone", "Europe/Berlin",
		"--catch-up", "skip", "--priority", "3", "daily"), "schedule shop/nightly set")
	// The server's scheduler fires the one-second schedule.
	testwait.Until(t, time.Minute, "a scheduled job", func() bool {
		return strings.Contains(f.run(t, "consume", "beats").Stdout, `{"n":1}`)
	})
	out := f.must(t, "schedule", "list")
	wantOut(t, out, "NAME", "NEXT RUN", "beat", "every 1s", "beats", "nightly", "0 2 * * *", "Europe/Berlin")
	var s scheduleAnswer
	f.mustJSON(t, &s, "schedule", "get", "--json", "nightly")
	if s.Cron != "0 2 * * *" || s.CatchUp != "skip" || s.Job.Queue != "reports" || s.NextRun == nil {
		t.Errorf("schedule get --json = %+v", s)
	}
	wantOut(t, f.must(t, "schedule", "pause", "beat"), "schedule shop/beat paused")
	wantOut(t, f.must(t, "schedule", "trigger", "beat"), "published job ")
	wantOut(t, f.must(t, "schedule", "resume", "beat"), "schedule shop/beat resumed; next run 20")
	wantOut(t, f.must(t, "schedule", "list", "--limit", "1"), "beat", "more: --after beat")
	wantOut(t, f.must(t, "schedule", "delete", "beat"), "deleted schedule shop/beat")
	wantFail(t, f.run(t, "schedule", "get", "beat"), exitError, "not_found")
	wantFail(t, f.run(t, "schedule", "set", "x", "q", "{}"), exitUsage, "give --cron or --every")
	wantFail(t, f.run(t, "schedule", "set", "x", "q", "--cron", "nope", "{}"), exitError, "cron")
}
