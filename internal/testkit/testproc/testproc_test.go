package testproc_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testproc"
)

// dial succeeds once something accepts connections at addr.
func dial(addr string) error {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// A server is started on a free port, answers until killed, and no longer after.
func TestStartAndKill(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed; install it with: sudo apt-get install -y redis-server")
	}
	p, err := testproc.Server{
		Command: func(port int) *exec.Cmd {
			return exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		},
		Ready:        dial,
		ReadyTimeout: 10 * time.Second,
	}.Start()
	if err != nil {
		t.Fatal(err)
	}
	if err := dial(p.Addr()); err != nil {
		t.Fatalf("the started server does not answer: %v", err)
	}
	p.Kill()
	if err := dial(p.Addr()); err == nil {
		t.Fatal("the killed server still answers")
	}
	p.Kill() // a second kill is harmless
}

// A server that exits before it is ready fails the start at once, quoting its log.
func TestStartExited(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(log, []byte("bad config line 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := testproc.Server{
		Command:      func(int) *exec.Cmd { return exec.Command("false") },
		Log:          log,
		Ready:        dial,
		ReadyTimeout: time.Minute,
	}.Start()
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "bad config line 3") {
		t.Fatalf("err = %v, want one saying the server exited, with its log", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the start took %v: it waited out ReadyTimeout instead of noticing the exit", time.Since(start))
	}
}
