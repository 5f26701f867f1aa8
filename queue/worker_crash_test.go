package queue_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// The crash test re-executes this test binary as a consumer process (TestWorkerCrashChild with
// these variables set), waits until its handler holds the job, kills it with SIGKILL and measures
// how long until a consumer of this process gets the job.
const (
	crashChildEnv  = "SLUICE_WORKER_CRASH_CHILD"
	crashURLEnv    = "SLUICE_WORKER_CRASH_URL"
	crashPrefixEnv = "SLUICE_WORKER_CRASH_PREFIX"
	crashLease     = time.Second
)

// TestWorkerCrashChild is the consumer process of TestWorkerCrashRedelivery. Run by go test
// directly it does nothing.
func TestWorkerCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) != "1" {
		return
	}
	rdb, err := redisx.NewClient(os.Getenv(crashURLEnv))
	if err != nil {
		t.Fatal(err)
	}
	c, err := queue.NewClient(rdb, queue.Config{Prefix: os.Getenv(crashPrefixEnv)})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.NewQueue[task](c, "ns", "q", queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_ = q.Consume(context.Background(), func(ctx context.Context, v *task) error {
		d, _ := queue.DeliveryFromContext(ctx)
		fmt.Printf("started %s %d\n", d.ID, d.Delivery)
		select {} // hold the job until the parent kills this process
	}, queue.ConsumeConfig{Concurrency: 1, TTR: crashLease})
}

func TestWorkerCrashRedelivery(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := setup(t, env, queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{})
	id, err := q.Produce(ctxT(t), &task{N: 42}, 0)
	if err != nil {
		t.Fatal(err)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestWorkerCrashChild$", "-test.count=1")
	child.Env = append(os.Environ(), crashChildEnv+"=1", crashURLEnv+"="+env.URL, crashPrefixEnv+"="+env.Prefix)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "started ") {
				lines <- s.Text()
				break
			}
		}
		for s.Scan() { // keep the pipe drained until the child is gone
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("the child consumer did not start the job within 30s")
	}
	if want := "started " + id + " 1"; line != want {
		t.Fatalf("child said %q, want %q", line, want)
	}

	// A consumer here waits for the job while the child holds it.
	type run struct {
		at       time.Time
		delivery int
	}
	got := make(chan run, 1)
	var handled atomic.Int64
	stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
		d, _ := queue.DeliveryFromContext(ctx)
		handled.Add(1)
		got <- run{at: time.Now(), delivery: d.Delivery}
		return nil
	}, queue.ConsumeConfig{Concurrency: 1, TTR: crashLease})

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var r run
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not run again within 30s of the crash")
	}
	took := r.at.Sub(killed)
	t.Logf("job of the killed consumer ran again %s after SIGKILL (lease %s)", took.Round(time.Millisecond), crashLease)
	// The lease the child held (extended after a third of it) ends at most one lease after the
	// kill, and the lease end wakes the waiting consumer: on a quiet machine about 2 × lease after
	// the kill (the figure logged above). Without that wake-up it would sleep until its safety
	// re-check, 30 s at the earliest (three quarters of the default WakeupInterval); the bound sits
	// far below that and far above what a loaded machine adds to the lease.
	if bound := crashLease + 10*time.Second; took > bound {
		t.Fatalf("redelivered %s after the kill, want under %s (the lease end must wake the consumer)", took, bound)
	}
	if r.delivery != 2 {
		t.Fatalf("redelivered as delivery %d, want 2", r.delivery)
	}
	testwait.Until(t, time.Minute, "the redelivered job acked", func() bool { return f.stats(t, "q").Acked == 1 })
	stop()
	if handled.Load() != 1 {
		t.Fatalf("handled %d times here, want 1", handled.Load())
	}
}
