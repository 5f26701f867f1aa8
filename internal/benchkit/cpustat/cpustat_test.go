package cpustat_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Self grows as this process works, and Process reads the same time from /proc (to its 10 ms
// resolution).
func TestSelfAndProcessCountThisProcess(t *testing.T) {
	fromProc, err := cpustat.Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	before := cpustat.Self()
	deadline := time.Now().Add(30 * time.Second)
	for cpustat.Self()-before < 100*time.Millisecond { // work until 100ms of CPU were counted
		if time.Now().After(deadline) {
			t.Fatalf("Self counted %s of CPU in 30s of spinning", cpustat.Self()-before)
		}
	}
	after, err := cpustat.Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-fromProc < 80*time.Millisecond {
		t.Fatalf("Process counted %s where Self counted 100ms or more", after-fromProc)
	}
	if _, err := cpustat.Process(-1); err == nil {
		t.Fatal("Process(-1) gave no error")
	}
}

func TestRedis(t *testing.T) {
	env := redistest.New(t)
	d, err := cpustat.Redis(context.Background(), env.Client)
	if err != nil || d <= 0 {
		t.Fatalf("Redis = %s, %v; want the server's CPU time", d, err)
	}
}
