package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func queuePath(ns, q string) string {
	return "/v1/ns/" + pathEscape(ns) + "/queues/" + pathEscape(q)
}

func jobPath(ns, q, id string) string { return queuePath(ns, q) + "/jobs/" + pathEscape(id) }

// publishAnswer is the server's answer to a publish.
type publishAnswer struct {
	JobID     string `json:"job_id"`
	Duplicate bool   `json:"duplicate"`
}

func runPublish(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "publish", "[flags] <queue> [payload]", `
Publish one job to a queue. The payload is the second argument, or standard input when it is
missing or "-". A payload that is valid JSON is sent as JSON; anything else as a JSON string.
--string always sends a string, --raw sends the bytes as they are (payload_base64).

Examples:
  sluice publish emails '{"to":"ada@example.com"}'
  sluice publish reports --delay 10m --tries 5 --unique-key report-42 '{"id":42}'
  cat image.png | sluice publish thumbnails --raw
  sluice publish orders --delay 30m --callback https://api.example.com/hooks/close '{"order":42}'`)
	cf := addConnFlags(fs, env)
	jf := addJobFlags(fs)
	var delay seconds
	fs.Var(&delay, "delay", "postpone the first delivery by this `duration` (10s, 1.5, 2m)")
	runAt := fs.String("at", "", "deliver at this RFC 3339 `time` instead of a delay")
	pos, err := parseArgs(fs, args, 1, 2, "<queue> [payload]")
	if err != nil {
		return err
	}
	if delay.set && *runAt != "" {
		return usagef("--delay and --at exclude each other")
	}
	job, err := jf.job(env, pos[min(1, len(pos)-1)], len(pos) == 2)
	if err != nil {
		return err
	}
	if delay.set {
		job["delay"] = secs(delay.d)
	}
	if *runAt != "" {
		at, err := time.Parse(time.RFC3339Nano, *runAt)
		if err != nil {
			return usagef("--at %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", *runAt)
		}
		job["run_at"] = at.Format(time.RFC3339Nano)
	}
	q := pos[0]
	var ans publishAnswer
	if err := cf.show(ctx, http.MethodPost, queuePath(cf.ns, q)+"/jobs", nil, job, &ans); err != nil || cf.json {
		return err
	}
	if ans.Duplicate {
		fmt.Fprintf(cf.out(), "duplicate: job %s already holds unique key %q in %s/%s\n", ans.JobID, *jf.uniqueKey, cf.ns, q)
		return nil
	}
	fmt.Fprintf(cf.out(), "published job %s to %s/%s\n", ans.JobID, cf.ns, q)
	return nil
}

// deliveredJob is a job in the answer of a consume.
type deliveredJob struct {
	JobID          string            `json:"job_id"`
	Queue          string            `json:"queue"`
	Payload        json.RawMessage   `json:"payload"`
	PayloadBase64  string            `json:"payload_base64"`
	Delivery       int               `json:"delivery"`
	RemainingTries int               `json:"remaining_tries"`
	Priority       int               `json:"priority"`
	Attributes     map[string]string `json:"attributes"`
	ElapsedMS      float64           `json:"elapsed_ms"`
}

func runConsume(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "consume", "[flags] <queue>...", `
Lease up to --count ready jobs from the queues (earlier queues first) and print them: a header
line per job (its id, queue, delivery number and tries left) followed by its payload. Ack each job
with "sluice ack <queue> <job-id> <delivery>" before its lease (--ttr) ends, or pass --ack.
With no job ready it waits up to --timeout, then prints "no jobs" on stderr and exits 0.

Examples:
  sluice consume emails
  sluice consume --count 10 --timeout 30s --ack emails reports`)
	cf := addConnFlags(fs, env)
	count := fs.Int("count", 1, "most jobs to lease (1..1000)")
	var ttr, timeout seconds
	fs.Var(&ttr, "ttr", "lease `duration` (default: each job's own)")
	fs.Var(&timeout, "timeout", "wait up to this `duration` for a job when none is ready (default: answer at once)")
	ack := fs.Bool("ack", false, "ack every job once it is printed")
	pos, err := parseArgs(fs, args, 1, -1, "<queue>...")
	if err != nil {
		return err
	}
	req := map[string]any{"queues": pos, "count": *count}
	if ttr.set {
		req["ttr"] = secs(ttr.d)
	}
	if timeout.set {
		req["timeout"] = secs(timeout.d)
		// The request may block for the whole timeout.
		cf.timeout = max(cf.timeout, timeout.d+cf.timeout)
	}
	c := cf.client()
	var ans struct {
		Jobs []deliveredJob `json:"jobs"`
	}
	data, err := c.callJSON(ctx, http.MethodPost, "/v1/ns/"+pathEscape(cf.ns)+"/consume", nil, req, &ans)
	if err != nil {
		return err
	}
	if cf.json {
		if err := printJSON(cf.out(), data); err != nil {
			return err
		}
	} else {
		if len(ans.Jobs) == 0 {
			fmt.Fprintf(env.Stderr, "no jobs in %s/%s\n", cf.ns, strings.Join(pos, ","))
		}
		for _, j := range ans.Jobs {
			fmt.Fprintf(cf.out(), "job %s  queue %s  delivery %d  tries left %d  priority %d",
				j.JobID, j.Queue, j.Delivery, j.RemainingTries, j.Priority)
			for k, v := range sortedMap(j.Attributes) {
				fmt.Fprintf(cf.out(), "  %s=%s", k, v)
			}
			fmt.Fprintf(cf.out(), "\n%s\n", payloadText(j.Payload, j.PayloadBase64))
		}
	}
	if !*ack {
		return nil
	}
	for _, j := range ans.Jobs {
		if _, err := c.call(ctx, http.MethodPost, jobPath(cf.ns, j.Queue, j.JobID)+"/ack", nil, map[string]any{"delivery": j.Delivery}); err != nil {
			return fmt.Errorf("ack job %s: %w", j.JobID, err)
		}
		if !cf.json {
			fmt.Fprintf(env.Stderr, "acked job %s\n", j.JobID)
		}
	}
	return nil
}

// payloadText shows a payload to people: a JSON string as its text, other JSON as it is, bytes
// as text when they are UTF-8 and as base64 otherwise.
func payloadText(payload json.RawMessage, b64 string) string {
	if b64 != "" {
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && isText(raw) {
			return string(raw)
		}
		return "base64:" + b64
	}
	var s string
	if json.Unmarshal(payload, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, payload) == nil {
		return buf.String()
	}
	return string(payload)
}

func isText(b []byte) bool {
	s := string(b)
	return strings.ToValidUTF8(s, "\uFFFD") == s && !strings.ContainsRune(s, 0)
}

// leaseArgs parses args and reads the <queue> <job-id> <delivery> arguments of ack and nack.
func leaseArgs(fs *flag.FlagSet, args []string) (q, id string, delivery int, err error) {
	pos, err := parseArgs(fs, args, 3, 3, "<queue> <job-id> <delivery>")
	if err != nil {
		return "", "", 0, err
	}
	delivery, err = strconv.Atoi(pos[2])
	if err != nil || delivery < 1 {
		return "", "", 0, usagef("delivery %q: want the delivery number consume printed (1, 2, ...)", pos[2])
	}
	return pos[0], pos[1], delivery, nil
}

func runAck(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "ack", "[flags] <queue> <job-id> <delivery>", `
Acknowledge a consumed job: it is done and will not be delivered again. The delivery number is
the one consume printed; an ack of a lease that already ended fails with lease_lost.

Example:
  sluice ack emails 01JD3M5R6W8X9Y0Z1A2B3C4D5E 1 --result '{"sent":true}'`)
	cf := addConnFlags(fs, env)
	result := fs.String("result", "", "`JSON` result kept with the job for a while (a non-JSON text is sent as a string)")
	q, id, delivery, err := leaseArgs(fs, args)
	if err != nil {
		return err
	}
	body := map[string]any{"delivery": delivery}
	if *result != "" {
		if json.Valid([]byte(*result)) {
			body["result"] = json.RawMessage(*result)
		} else {
			body["result"] = *result
		}
	}
	if err := cf.show(ctx, http.MethodPost, jobPath(cf.ns, q, id)+"/ack", nil, body, nil); err != nil || cf.json {
		return err
	}
	fmt.Fprintf(cf.out(), "acked job %s (delivery %d)\n", id, delivery)
	return nil
}

func runNack(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "nack", "[flags] <queue> <job-id> <delivery>", `
Report that a consumed job failed. With tries left it is delivered again after --retry-after (or
its backoff); without (or with --no-retry), it goes to the dead letter. Prints the outcome.

Example:
  sluice nack emails 01JD3M5R6W8X9Y0Z1A2B3C4D5E 1 --error "smtp timeout" --retry-after 30s`)
	cf := addConnFlags(fs, env)
	msg := fs.String("error", "", "what went wrong (kept with the job)")
	var retryAfter seconds
	fs.Var(&retryAfter, "retry-after", "deliver again after this `duration` (default: the job's backoff)")
	noRetry := fs.Bool("no-retry", false, "send the job to the dead letter even when it has tries left")
	q, id, delivery, err := leaseArgs(fs, args)
	if err != nil {
		return err
	}
	body := map[string]any{"delivery": delivery}
	if *msg != "" {
		body["error"] = *msg
	}
	if retryAfter.set {
		body["retry_after"] = secs(retryAfter.d)
	}
	if *noRetry {
		body["no_retry"] = true
	}
	var ans map[string]any
	if err := cf.show(ctx, http.MethodPost, jobPath(cf.ns, q, id)+"/nack", nil, body, &ans); err != nil || cf.json {
		return err
	}
	fmt.Fprintf(cf.out(), "nacked job %s (delivery %d)", id, delivery)
	for _, k := range []string{"outcome", "state"} {
		if v, ok := ans[k].(string); ok && v != "" {
			fmt.Fprintf(cf.out(), ": %s", v)
			break
		}
	}
	fmt.Fprintln(cf.out())
	return nil
}
