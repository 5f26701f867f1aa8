package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/tenant"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func setup(t testing.TB, env *redistest.Env) (*UI, *queue.Client) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	ns := tenant.NewNamespaceStore(env.Client, env.Prefix)
	u, err := New(Config{
		Redis: env.Client, Prefix: env.Prefix, Queue: q, Namespaces: ns,
		Tokens: tenant.NewTokenStore(env.Client, env.Prefix, ns, time.Second),
		Limits: tenant.NewLimitStore(env.Client, env.Prefix, time.Second, log), Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return u, q
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSampleOnce: the first sample of a minute is kept (later ones of the same minute do not
// overwrite it), samples older than the window go, and the hash expires.
func TestSampleOnce(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		u, q := setup(t, env)
		ctx := ctxT(t)
		for range 3 {
			if _, err := q.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		key := env.Prefix + ":ui:throughput:{ns:q}"
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		stale := strconv.FormatInt(now.Unix()/60-window-5, 10)
		if err := env.Client.HSet(ctx, key, stale, "1:1", "junk", "1:1").Err(); err != nil {
			t.Fatal(err)
		}
		for {
			minute := strconv.FormatInt(now.Unix()/60, 10)
			if err := u.sampler.SampleOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			if err := u.sampler.SampleOnce(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := env.Client.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			after, err := env.Client.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if after.Unix()/60 != now.Unix()/60 {
				now = after // a minute passed mid-test: the samples may be of two minutes; again
				continue
			}
			// The first sample: 3 published, none acked or failed, the oldest ready job's age,
			// and no processing times (no earlier histogram to count from), which 'h' now keeps.
			first := func(h map[string]string, slot string) bool {
				v := h[slot]
				return len(h) == 2 && strings.HasPrefix(v, "3:0:0:") && strings.HasSuffix(v, ":?") && h["h"] == slot+"|"
			}
			if !first(got, minute) {
				t.Fatalf("samples %v, want only %s=3:0:0:<age>:? and h", got, minute)
			}
			day, err := env.Client.HGetAll(ctx, env.Prefix+":ui:throughput-day:{ns:q}").Result()
			if slot := strconv.FormatInt(now.Unix()/int64(daySlot/time.Second), 10); err != nil || !first(day, slot) {
				t.Fatalf("day samples %v %v, want only %s=3:0:0:<age>:? and h", day, err, slot)
			}
			break
		}
		ttl, err := env.Client.TTL(ctx, key).Result()
		if err != nil || ttl <= 0 || ttl > sampleTTL {
			t.Fatalf("ttl %s %v", ttl, err)
		}
	})
}

// TestThroughputSeries: per-minute throughput is the difference of consecutive samples, the
// current minute's the difference of its sample and the counters now; minutes without both
// samples have no data (-1), as do failures sampled before they were counted, and a counter that
// went down counts as 0.
func TestThroughputSeries(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	u, _ := setup(t, env)
	ctx := ctxT(t)
	key := env.Prefix + ":ui:throughput:{ns:q}"
	for {
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		m := now.Unix() / 60
		f := func(d int64) string { return strconv.FormatInt(m-d, 10) }
		if err := env.Client.HSet(ctx, key, f(3), "0:0", f(2), "10:4", f(1), "15:9:1", f(0), "12:20:2").Err(); err != nil {
			t.Fatal(err)
		}
		s, err := u.throughput(ctx, hourSpan, "ns", []string{"q", "none"}, []queue.Stats{{Published: 20, Acked: 25, Retried: 2, DeadLettered: 3}, {}})
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := env.Client.Time(ctx).Result(); after.Unix()/60 != m {
			if err := env.Client.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			continue // the minute turned mid-test
		}
		got := fmt.Sprint(s[0].Published[window-5:], s[0].Acked[window-5:], s[0].Failed[window-5:])
		if want := "[-1 10 5 0 8] [-1 4 5 11 5] [-1 -1 -1 1 3]"; got != want {
			t.Fatalf("series tail %s, want %s", got, want)
		}
		if last(s[1].Acked) != -1 || last(s[0].Acked) != 5 {
			t.Fatalf("last: %d %d", last(s[1].Acked), last(s[0].Acked))
		}
		break
	}
	p := points(s3(), 10)
	if !strings.HasPrefix(p, "0,19.0 1,1.0 2,10.0") || strings.Count(p, " ") != window-1 {
		t.Fatalf("points %q", p)
	}
}

func s3() []int64 {
	s := make([]int64, window)
	s[0], s[1], s[2] = -1, 10, 5
	return s
}

// TestSampleKeepsProcessingTimesSinceTheSampleBefore runs sample.lua over a hash whose 'h' kept
// the cumulative histogram of the minute before: the new sample holds only the acks since then,
// and 'h' moves on. Then the series: each minute's p50 and p99 come from its sample's acks, the
// current minute's from the live histogram less 'h', and the oldest age from the sample at each
// minute's end (the live one for the current minute).
func TestSampleKeepsProcessingTimesSinceTheSampleBefore(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	u, _ := setup(t, env)
	ctx := ctxT(t)
	key, day := env.Prefix+":ui:throughput:{ns:q}", env.Prefix+":ui:throughput-day:{ns:q}"
	for {
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		m := now.Unix() / 60
		f := func(d int64) string { return strconv.FormatInt(m-d, 10) }
		// Two minutes ago: 50 acks of about 10 ms (bucket 13); a minute ago the histogram had
		// grown by 2 acks of about 1 s (bucket 39) and 98 of 10 ms.
		if err := env.Client.HSet(ctx, key, f(2), "0:50:0:0:?", f(1), "0:150:0:2000:13.98,39.2", "h", f(1)+"|13.148,39.2").Err(); err != nil {
			t.Fatal(err)
		}
		args := []any{0, 160, 0, window, 7200, int(daySlot / time.Second), daySlots, 93600, 4000, "13.154,39.2,63.4"}
		if err := u.sampler.scripts.Run(ctx, "sample", []string{key, day}, args...).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := env.Client.HMGet(ctx, key, f(0), "h").Result()
		if err != nil {
			t.Fatal(err)
		}
		st := queue.Stats{Acked: 170, OldestReady: 5 * time.Second, ProcessingTimes: queue.ProcessingTimes{13: 156, 39: 2, 63: 4}}
		s, err := u.throughput(ctx, hourSpan, "ns", []string{"q"}, []queue.Stats{st})
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := env.Client.Time(ctx).Result(); after.Unix()/60 != m {
			if err := env.Client.Del(ctx, key, day).Err(); err != nil {
				t.Fatal(err)
			}
			continue // the minute turned mid-test
		}
		// The minute's sample: 6 acks of 10 ms and 4 of a minute since 'h'.
		if v, _ := got[0].(string); !strings.HasPrefix(v, "0:160:0:4000:") || fmt.Sprint(parseHistogram(strings.SplitN(v, ":", 5)[4])) != "map[13:6 63:4]" {
			t.Errorf("sample %q, want 0:160:0:4000: and the acks since h (13.6 and 63.4)", got[0])
		}
		if got[1] != f(0)+"|13.154,39.2,63.4" {
			t.Errorf("h %q, want this minute's histogram", got[1])
		}
		tail := func(v []time.Duration) string {
			out := make([]string, 0, 3)
			for _, d := range v[window-3:] {
				out = append(out, formatDuration(d))
			}
			return strings.Join(out, " ")
		}
		// p50/p99 per minute: [m-2, m-1): 98 of 10 ms and 2 of 1 s; [m-1, m): 6 of 10 ms and 4 of
		// a minute; the current minute: 2 more of 10 ms. Oldest: at each minute's end.
		if g, want := tail(s[0].P50), "10 ms 10 ms 10 ms"; g != want {
			t.Errorf("p50 %s, want %s", g, want)
		}
		if g, want := tail(s[0].P99), "939 ms 1.0 min 10 ms"; g != want {
			t.Errorf("p99 %s, want %s", g, want)
		}
		if g, want := tail(s[0].Oldest), "2.0 s 4.0 s 5.0 s"; g != want {
			t.Errorf("oldest %s, want %s", g, want)
		}
		if n := s[0].Acks.Count(); n != 112 {
			t.Errorf("the hour's acks: %d, want 112", n)
		}
		break
	}
}

// A quiet queue (counters and ready, delayed and leased jobs unchanged: here one ready job nobody
// takes) is sampled every quietEvery, not at every pass; one that moves is sampled at every pass
// again once it is due.
func TestSamplerSkipsQuietQueues(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	u, q := setup(t, env)
	ctx := ctxT(t)
	samples := &redistest.Counter{Match: func(cmd redis.Cmder) bool { return redistest.NamesKey(cmd, ":ui:throughput:{ns:q}") }}
	env.Client.AddHook(samples)
	if _, err := q.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	pass := func() int64 {
		t.Helper()
		n := samples.Count()
		if err := u.sampler.SampleOnce(ctx); err != nil {
			t.Fatal(err)
		}
		return samples.Count() - n
	}
	if n := pass(); n == 0 {
		t.Fatal("the first pass did not sample the queue")
	}
	if n := pass(); n == 0 {
		t.Fatal("the second pass (the queue's first quiet one) did not sample it")
	}
	for range 3 {
		if n := pass(); n != 0 {
			t.Fatalf("a pass sampled the quiet queue (%d commands), want none until quietEvery", n)
		}
	}
	// It moves (its job is taken); once it is due again (quietEvery later: moved here), it is
	// sampled at every pass.
	if jobs, err := q.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}, TTR: time.Minute}); err != nil || len(jobs) != 1 {
		t.Fatalf("consume: %v %v", jobs, err)
	}
	u.sampler.mu.Lock()
	for k, st := range u.sampler.quiet {
		st.next = time.Now().Add(-time.Second)
		u.sampler.quiet[k] = st
	}
	u.sampler.mu.Unlock()
	for range 2 {
		if n := pass(); n == 0 {
			t.Fatal("a pass did not sample the queue that moved")
		}
	}
}

// An unchanged stretch between two samples (a quiet queue's) reads as zeros, not as no data; a
// stretch whose counters moved stays unknown.
func TestThroughputFillsUnchangedStretches(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	u, _ := setup(t, env)
	ctx := ctxT(t)
	for _, tc := range []struct {
		queue string
		live  queue.Stats
		want  string
	}{
		{"quiet", queue.Stats{Published: 5, Acked: 5}, "[0 0 0 0 0 0 0 0 0 0]"},
		{"moved", queue.Stats{Published: 9, Acked: 5}, "[0 0 0 0 0 -1 -1 -1 -1 -1]"},
	} {
		key := env.Prefix + ":ui:throughput:{ns:" + tc.queue + "}"
		for {
			now, err := env.Client.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			m := now.Unix() / 60
			f := func(d int64) string { return strconv.FormatInt(m-d, 10) }
			if err := env.Client.HSet(ctx, key, f(12), "5:5:0:60000:?", f(4), "5:5:0:540000:?").Err(); err != nil {
				t.Fatal(err)
			}
			s, err := u.throughput(ctx, hourSpan, "ns", []string{tc.queue}, []queue.Stats{tc.live})
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := env.Client.Time(ctx).Result(); after.Unix()/60 != m {
				continue // the minute turned mid-test
			}
			if got := fmt.Sprint(s[0].Published[window-10:]); got != tc.want {
				t.Fatalf("%s: published per minute %s, want %s", tc.queue, got, tc.want)
			}
			// The oldest ready job's age between the two samples (1 min at m-12, 9 min at m-4)
			// grows a minute a minute: 7 min at m-6, the end of minute m-7.
			if got := s[0].Oldest[window-8]; got != 7*time.Minute {
				t.Fatalf("%s: oldest ready at the end of minute m-7 %s, want 7m", tc.queue, got)
			}
			break
		}
	}
}
