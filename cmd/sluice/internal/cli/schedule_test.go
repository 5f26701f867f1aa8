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
	// Every field of a schedule and of its job, from the flags.
	var full struct {
		Every    float64 `json:"every"`
		Timezone string  `json:"timezone"`
		CatchUp  string  `json:"catch_up"`
		Jitter   float64 `json:"jitter"`
		StartAt  string  `json:"start_at"`
		EndAt    string  `json:"end_at"`
		Paused   bool    `json:"paused"`
		NextRun  any     `json:"next_run"`
		Job      struct {
			Queue      string            `json:"queue"`
			Payload    map[string]int    `json:"payload"`
			Priority   int               `json:"priority"`
			Tries      int               `json:"tries"`
			TTL        float64           `json:"ttl"`
			TTR        float64           `json:"ttr"`
			UniqueKey  string            `json:"unique_key"`
			UniqueFor  float64           `json:"unique_for"`
			Attributes map[string]string `json:"attributes"`
			Backoff    struct{ Base, Max float64 }
		} `json:"job"`
	}
	f.mustJSON(t, &full, "schedule", "set", "--json", "full", "q", "--every", "2s", "--timezone", "Europe/Berlin",
		"--catch-up", "all", "--jitter", "1s", "--start", "2026-01-01T00:00:00Z", "--end", "2099-01-01T00:00:00Z", "--paused",
		"--priority", "7", "--tries", "4", "--ttl", "1h", "--ttr", "30s", "--unique-key", "k1", "--unique-for", "10m",
		"--attr", "a=b", "--backoff", "1s", "--backoff-max", "10s", `{"x":1}`)
	j := full.Job
	if full.Every != 2 || full.Timezone != "Europe/Berlin" || full.CatchUp != "all" || full.Jitter != 1 ||
		full.StartAt != "2026-01-01T00:00:00Z" || full.EndAt != "2099-01-01T00:00:00Z" || !full.Paused || full.NextRun != nil ||
		j.Queue != "q" || j.Payload["x"] != 1 || j.Priority != 7 || j.Tries != 4 || j.TTL != 3600 || j.TTR != 30 ||
		j.UniqueKey != "k1" || j.UniqueFor != 600 || j.Attributes["a"] != "b" || j.Backoff.Base != 1 || j.Backoff.Max != 10 {
		t.Errorf("schedule set with every flag = %+v", full)
	}
	wantFail(t, f.run(t, "schedule", "set", "x", "q", "{}"), exitUsage, "give --cron or --every")
	wantFail(t, f.run(t, "schedule", "set", "x", "q", "--cron", "nope", "{}"), exitError, "cron")
}
