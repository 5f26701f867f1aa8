package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// publishedID returns the job id of `sluice publish` output ("published job <id> to ns/q").
func publishedID(t *testing.T, out string) string {
	t.Helper()
	f := strings.Fields(out)
	if len(f) < 3 || f[0] != "published" {
		t.Fatalf("unexpected publish output %q", out)
	}
	return f[2]
}

type consumed struct {
	Jobs []struct {
		JobID          string            `json:"job_id"`
		Queue          string            `json:"queue"`
		Payload        json.RawMessage   `json:"payload"`
		Delivery       int               `json:"delivery"`
		RemainingTries int               `json:"remaining_tries"`
		Priority       int               `json:"priority"`
		Attributes     map[string]string `json:"attributes"`
	} `json:"jobs"`
}

func TestPublishConsumeAck(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := publishedID(t, f.must(t, "publish", "emails", `{"to": "ada"}`))
	out := f.must(t, "consume", "emails")
	wantOut(t, out, "job "+id, "queue emails", "delivery 1", "tries left 2", "\n{\"to\":\"ada\"}\n")
	wantOut(t, f.must(t, "ack", "emails", id, "1", "--result", `{"sent":true}`), "acked job "+id+" (delivery 1)")

	// The lease is over: a second ack is refused with the server's code and message.
	r := f.run(t, "ack", "emails", id, "1")
	wantFail(t, r, exitError, "sluice ack: ", "(HTTP 4")

	r = f.run(t, "consume", "emails")
	if r.Code != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "no jobs in shop/emails") {
		t.Fatalf("consume of an empty queue: %+v", r)
	}
}

func TestPublishOptionsJSON(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var pub publishAnswer
	f.mustJSON(t, &pub, "publish", "--json", "--priority", "7", "--tries", "2", "--ttl", "1h",
		"--attr", "lang=en", "--attr", "kind=welcome", "q", `{"n": 1}`)
	if pub.JobID == "" || pub.Duplicate {
		t.Fatalf("publish --json = %+v", pub)
	}
	var c consumed
	f.mustJSON(t, &c, "consume", "--json", "--ttr", "30", "q")
	if len(c.Jobs) != 1 {
		t.Fatalf("consume --json: %+v", c)
	}
	j := c.Jobs[0]
	if j.JobID != pub.JobID || j.Priority != 7 || j.RemainingTries != 1 || j.Attributes["lang"] != "en" ||
		j.Attributes["kind"] != "welcome" || compact(t, j.Payload) != `{"n":1}` {
		t.Fatalf("consumed %+v, payload %s", j, j.Payload)
	}
}

func TestPublishPayloadForms(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// A non-JSON argument and --string are sent as JSON strings; stdin is read without its
	// trailing newline.
	f.must(t, "publish", "q", "plain words")
	f.must(t, "publish", "q", "--string", "123")
	r := runWith(t, f.env(), "from stdin\n", "publish", "q")
	if r.Code != 0 {
		t.Fatalf("publish from stdin: %+v", r)
	}
	var c consumed
	f.mustJSON(t, &c, "consume", "--json", "--count", "3", "q")
	var got []string
	for _, j := range c.Jobs {
		got = append(got, compact(t, j.Payload))
	}
	want := []string{`"plain words"`, `"123"`, `"from stdin"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("payloads %v, want %v", got, want)
	}

	// --raw sends the bytes as they are; consume prints them as text.
	r = runWith(t, f.env(), "raw bytes\n", "publish", "--raw", "r")
	if r.Code != 0 {
		t.Fatalf("publish --raw: %+v", r)
	}
	wantOut(t, f.must(t, "consume", "r"), "\nraw bytes\n")
}

func TestPublishDelayAndUniqueKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := publishedID(t, f.must(t, "publish", "--delay", "1h", "--unique-key", "report-42", "q", "{}"))
	wantOut(t, f.must(t, "publish", "--unique-key", "report-42", "q", "{}"),
		"duplicate: job "+id+` already holds unique key "report-42"`)
	r := f.run(t, "consume", "q")
	if r.Code != 0 || r.Stdout != "" {
		t.Fatalf("a delayed job was delivered: %+v", r)
	}
	wantOut(t, f.must(t, "stats", "q"), "delayed", "ready")
}

func TestConsumeAckFlagAndManyQueues(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := publishedID(t, f.must(t, "publish", "a", `"first"`))
	b := publishedID(t, f.must(t, "publish", "b", `"second"`))
	r := f.run(t, "consume", "--count", "5", "--timeout", "1s", "--ack", "a", "b")
	if r.Code != 0 {
		t.Fatalf("consume --ack: %+v", r)
	}
	wantOut(t, r.Stdout, "job "+a, "queue a", "first", "job "+b, "queue b", "second")
	wantOut(t, r.Stderr, "acked job "+a, "acked job "+b)
	// Both are acked: nothing comes back.
	r = f.run(t, "consume", "a", "b")
	if r.Stdout != "" {
		t.Fatalf("acked jobs delivered again: %s", r.Stdout)
	}
}

func TestNackDeadListRespawn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := publishedID(t, f.must(t, "publish", "--tries", "1", "jobs", `{"x": 1}`))
	f.must(t, "consume", "jobs")
	wantOut(t, f.must(t, "nack", "jobs", id, "1", "--error", "smtp timeout"), "nacked job "+id+" (delivery 1)")

	out := f.must(t, "dead", "list", "jobs")
	wantOut(t, out, "JOB", "LAST ERROR", id, "smtp timeout", `{"x":1}`)
	var dead struct {
		Jobs []map[string]any `json:"jobs"`
	}
	f.mustJSON(t, &dead, "dead", "list", "--json", "--limit", "10", "jobs")
	if len(dead.Jobs) != 1 {
		t.Fatalf("dead list --json: %+v", dead)
	}

	wantOut(t, f.must(t, "dead", "respawn", "jobs", id), "respawned 1 job(s) in shop/jobs")
	wantOut(t, f.must(t, "dead", "list", "jobs"), "is empty")
	out = f.must(t, "consume", "jobs")
	wantOut(t, out, "job "+id)

	// Nack with a retry: the job has tries left.
	id2 := publishedID(t, f.must(t, "publish", "--tries", "3", "retry", `{}`))
	f.must(t, "consume", "retry")
	f.must(t, "nack", "retry", id2, "1", "--retry-after", "0")
	wantOut(t, f.must(t, "consume", "retry"), "job "+id2, "delivery 2")

	// Respawn by --limit; neither ids nor --limit is a usage error.
	wantFail(t, f.run(t, "dead", "respawn", "jobs"), exitUsage, "--limit")
	wantOut(t, f.must(t, "dead", "respawn", "--limit", "5", "jobs"), "respawned 0 job(s)")
}

func TestStats(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.run(t, "stats")
	if r.Code != 0 || !strings.Contains(r.Stdout, "no queues in namespace shop") {
		t.Fatalf("stats of an empty namespace: %+v", r)
	}
	f.must(t, "publish", "alpha", "{}")
	f.must(t, "publish", "alpha", "{}")
	f.must(t, "publish", "beta", "{}")
	out := f.must(t, "stats")
	wantOut(t, out, "QUEUE", "READY", "DELAYED", "LEASED", "DEAD", "alpha", "beta")
	for _, line := range strings.Split(out, "\n") {
		if fl := strings.Fields(line); len(fl) > 1 && fl[0] == "alpha" && fl[1] != "2" {
			t.Errorf("alpha's ready is %s, want 2:\n%s", fl[1], out)
		}
	}
	one := f.must(t, "stats", "alpha")
	wantOut(t, one, "queue shop/alpha", "ready", "published")
	var js map[string]any
	f.mustJSON(t, &js, "stats", "--json")
	if _, ok := js["queues"]; !ok {
		t.Fatalf("stats --json: %v", js)
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("payload %q: %v", raw, err)
	}
	return b.String()
}

func TestRetryOptions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// --at in the future: delayed.
	f.must(t, "publish", "--at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "later", "{}")
	if r := f.run(t, "consume", "later"); r.Stdout != "" {
		t.Fatalf("a job due in an hour was delivered: %s", r.Stdout)
	}
	wantFail(t, f.run(t, "publish", "--at", "tomorrow", "later", "{}"), exitUsage, "RFC 3339")
	wantFail(t, f.run(t, "publish", "--at", "2030-01-01T00:00:00Z", "--delay", "1s", "later", "{}"), exitUsage, "exclude")

	// A nack without --retry-after waits for the backoff; --no-retry goes to the dead letter.
	id := publishedID(t, f.must(t, "publish", "--tries", "5", "--backoff", "1h", "--backoff-max", "2h", "--unique-for", "1m", "--unique-key", "u1", "b", "{}"))
	f.must(t, "consume", "b")
	wantOut(t, f.must(t, "nack", "b", id, "1"), "nacked job "+id+" (delivery 1): retried")
	if r := f.run(t, "consume", "b"); r.Stdout != "" {
		t.Fatalf("a job backing off for an hour was delivered: %s", r.Stdout)
	}
	id2 := publishedID(t, f.must(t, "publish", "--tries", "5", "b2", "{}"))
	f.must(t, "consume", "b2")
	wantOut(t, f.must(t, "nack", "--no-retry", "b2", id2, "1", "--error", "bad input"), ": dead")
	wantOut(t, f.must(t, "dead", "list", "b2"), id2, "bad input")
}
