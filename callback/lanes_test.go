package callback_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// publishLanes publishes one callback job to each of the queues, 1,000 a PublishMany.
func (f *cbFixture) publishLanes(t *testing.T, queues []string, p queue.PublishParams) {
	t.Helper()
	for start := 0; start < len(queues); start += 1000 {
		ps := make([]queue.PublishParams, 0, 1000)
		for _, q := range queues[start:min(start+1000, len(queues))] {
			p.Namespace, p.Queue = f.ns, q
			ps = append(ps, p)
		}
		if _, err := f.q.PublishMany(ctxT(t), ps); err != nil {
			t.Fatalf("PublishMany: %v", err)
		}
	}
}

// waitCounted waits until the deliverer has counted n deliveries (it counts each once its outcome
// is recorded, after the receiver answered).
func waitCounted(t *testing.T, d *callback.Deliverer, n int64) {
	t.Helper()
	testwait.Until(t, 2*time.Minute, fmt.Sprintf("%d deliveries counted", n), func() bool {
		return d.Stats().Delivered >= n
	})
}

// waitDelivered waits until the receiver got a call on each of the paths (under /hooks).
func (f *cbFixture) waitDelivered(t *testing.T, paths ...string) {
	t.Helper()
	testwait.Until(t, 2*time.Minute, fmt.Sprintf("calls on %v", paths), func() bool {
		got := map[string]bool{}
		for _, c := range f.recv.got() {
			got[c.path] = true
		}
		for _, p := range paths {
			if !got["/hooks"+p] {
				return false
			}
		}
		return true
	})
}

// A callback due in a lane that sorts after 10,000 idle lanes (each with a callback job an hour
// away) is found through the due index and delivered, by a deliverer that started after it was
// published (so no notification told it): the deliverer visits the lane with work, never the idle
// ones.
func TestCallbackDueAfterManyIdleLanes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		ctx := ctxT(t)
		// The registry's sweep (for lanes an older version stored) completes before the lanes
		// exist, as in a deployment whose lanes were all written with the due index.
		if _, _, err := f.q.SweepCallbackLanes(ctx, 0, 1000, time.Hour); err != nil {
			t.Fatal(err)
		}
		const idle = 10000
		queues := make([]string, idle)
		for i := range queues {
			queues[i] = fmt.Sprintf("idle%05d", i)
		}
		f.publishLanes(t, queues, queue.PublishParams{Callback: f.hook("/idle"), Delay: time.Hour})
		f.publishLanes(t, []string{"zzz"}, queue.PublishParams{Callback: f.hook("/late"), Delay: 100 * time.Millisecond})

		d := f.start(t, callback.DelivererConfig{})
		f.waitDelivered(t, "/late")
		waitCounted(t, d, 1)
		if st := d.Stats(); st.Visits > 100 || st.Delivered != 1 {
			t.Fatalf("stats %+v: want 1 delivered and a few lane visits, not the %d idle lanes", st, idle)
		}
	})
}

// A lane whose receiver fails every call (500) does not hold up the others: with two workers and
// twenty failing jobs retried with backoff, the jobs of lanes before and after it are delivered.
func TestCallbackLaneWhoseReceiverFailsDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		f.recv.setRespond(func(n int, w http.ResponseWriter) {
			if strings.HasPrefix(f.recv.got()[n-1].path, "/hooks/bad") {
				w.WriteHeader(http.StatusInternalServerError)
			}
		})
		bad := make([]string, 20)
		for i := range bad {
			bad[i] = fmt.Sprintf("bad%02d", i)
		}
		f.publishLanes(t, bad, queue.PublishParams{Callback: f.hook("/bad"), Tries: 100,
			Backoff: queue.Backoff{Base: 100 * time.Millisecond, Max: time.Second}})
		good := []string{"aa", "mm", "zz"}
		for _, q := range good {
			f.publishLanes(t, []string{q}, queue.PublishParams{Callback: f.hook("/" + q)})
		}
		d := f.start(t, callback.DelivererConfig{Workers: 2})
		f.waitDelivered(t, "/aa", "/mm", "/zz")
		waitCounted(t, d, int64(len(good)))
		if st := d.Stats(); st.Delivered != int64(len(good)) {
			t.Fatalf("stats %+v, want only the good lanes delivered", st)
		}
	})
}

// A lane whose visit fails (a key of the wrong type under its name) is logged by name and tried
// again after a backoff; the lanes before and after it are delivered meanwhile, and once the lane
// is mended its callback goes out too.
func TestCallbackFailingLaneIsIsolatedAndRetried(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		ctx := ctxT(t)
		for _, q := range []string{"aa", "bad", "zz"} {
			f.publishLanes(t, []string{q}, queue.PublishParams{Callback: f.hook("/" + q)})
		}
		broken := env.Prefix + ":" + "{" + f.ns + ":bad}:expiry"
		if err := env.Client.Set(ctx, broken, "not a zset", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var log testio.Buffer
		d := f.start(t, callback.DelivererConfig{PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		f.waitDelivered(t, "/aa", "/zz")
		testwait.Until(t, 2*time.Minute, "the failing lane logged", func() bool {
			return strings.Contains(log.String(), "callback lane failed")
		})
		for _, want := range []string{"namespace=" + f.ns, "queue=bad", "retry_in=", "WRONGTYPE"} {
			if !strings.Contains(log.String(), want) {
				t.Fatalf("log %q lacks %q", log.String(), want)
			}
		}
		if st := d.Stats(); st.LaneFailures < 1 {
			t.Fatalf("stats %+v, want the lane's failures counted", st)
		}
		if err := env.Client.Del(ctx, broken).Err(); err != nil {
			t.Fatal(err)
		}
		f.waitDelivered(t, "/bad")
	})
}

// Callback jobs stored without the due index (an older version's, here: the index removed, and
// no deliverer listening when they were published) are found by the sweep of the callback
// registry: with 200 such lanes (past a small set's compact encoding), every one is reached.
func TestCallbackLanesStoredWithoutTheIndexAreSwept(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		const lanes = 200
		queues := make([]string, lanes)
		for i := range queues {
			queues[i] = fmt.Sprintf("q%03d", i)
		}
		f.publishLanes(t, queues, queue.PublishParams{Callback: f.hook("/sweep")})
		if err := redistest.DeletePrefix(ctxT(t), env.Client, env.Prefix+":callbacks:due"); err != nil {
			t.Fatal(err)
		}
		f.start(t, callback.DelivererConfig{Workers: 8, PollInterval: 5 * time.Millisecond})
		testwait.Until(t, 2*time.Minute, "every lane's callback delivered", func() bool {
			return len(f.recv.got()) >= lanes
		})
	})
}
