//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// TestWorkersKilled publishes SLUICE_CHAOS_JOBS jobs and runs them through three SDK worker
// processes, one of which is SIGKILLed (and started again) every 200-600ms until the queue is
// empty. Jobs held by a killed worker must run elsewhere once their lease ends; none may be lost.
func TestWorkersKilled(t *testing.T) {
	srv := redistest.StartServer(t, "appendfsync everysec")
	r := newRig(t, "workers", srv.URL())
	n := envInt("SLUICE_CHAOS_JOBS", 50000)
	ctx := context.Background()
	q, err := queue.NewQueue[job](r.client, r.spec.NS, r.spec.Queue, queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for start := 0; start < n; start += 500 {
		batch := make([]*job, 0, 500)
		for i := start; i < min(start+500, n); i++ {
			batch = append(batch, &job{ID: "w-" + strconv.Itoa(i)})
		}
		if _, err := q.ProduceMany(ctx, batch, 0, queue.WithTries(1000)); err != nil {
			t.Fatalf("produce: %v", err)
		}
		for _, j := range batch {
			r.acknowledged(j.ID)
		}
	}
	workers := []*worker{r.startWorker(), r.startWorker(), r.startWorker()}
	deadline := time.Now().Add(3 * time.Minute)
	for !r.drained(ctx) && time.Now().Before(deadline) {
		time.Sleep(jitter(200*time.Millisecond, 600*time.Millisecond)) // the chaos: time between kills
		i := rand.IntN(len(workers))
		workers[i].kill()
		r.killedWorker(workers[i])
		workers[i] = r.startWorker()
	}
	r.waitDrained(30 * time.Second)
	for _, w := range workers {
		w.kill()
	}
	r.report("")
}

// TestServersKilled sends jobs over HTTP to two `sluice server` instances for
// SLUICE_CHAOS_SECONDS while one of them is SIGKILLed and started again every 1-3s; two SDK
// worker processes run the jobs. Every publish answered 201 must run.
func TestServersKilled(t *testing.T) {
	bin := buildSluice(t)
	srv := redistest.StartServer(t, "appendfsync everysec")
	r := newRig(t, "servers", srv.URL())
	instances := []*instance{startInstance(t, bin, srv.URL()), startInstance(t, bin, srv.URL())}
	token := adminSetup(t, instances[0])
	r.startWorker()
	r.startWorker()

	hc := &http.Client{Timeout: 5 * time.Second}
	stop := r.publishers(8, "s-", func(id string) bool {
		return publishHTTP(hc, instances[rand.IntN(len(instances))].publicURL(), token, id)
	})
	worst := r.killFor(loadDuration(), func() time.Duration { return jitter(time.Second, 3*time.Second) }, func() func() {
		in := instances[rand.IntN(len(instances))]
		in.kill()
		return func() {
			time.Sleep(200 * time.Millisecond) // the instance stays down a moment, as after a crash
			in.start(t)
		}
	})
	ok, fails := stop()
	r.waitDrained(time.Minute)
	r.report(fmt.Sprintf("; HTTP publishes %d answered 201, %d failed (instance down); kill to ready again at most %s",
		ok, fails, worst.Round(time.Millisecond)))
}

// TestRedisKilled publishes through the SDK for SLUICE_CHAOS_SECONDS while Redis (append-only,
// appendfsync always) is SIGKILLed and restarted every 3-6s; two SDK worker processes run the
// jobs. Every publish that returned without error must run.
func TestRedisKilled(t *testing.T) {
	srv := redistest.StartServer(t) // appendfsync always
	r := newRig(t, "redis", srv.URL())
	q, err := queue.NewQueue[job](r.client, r.spec.NS, r.spec.Queue, queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.startWorker()
	r.startWorker()
	stop := r.publishers(4, "r-", func(id string) bool {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := q.Produce(pctx, &job{ID: id}, 0, queue.WithTries(1000))
		return err == nil
	})
	worst := r.killFor(loadDuration(), func() time.Duration { return jitter(3*time.Second, 6*time.Second) }, func() func() {
		srv.Kill()
		return func() {
			time.Sleep(jitter(200*time.Millisecond, time.Second)) // down for a while
			srv.Restart()
		}
	})
	ok, fails := stop()
	r.waitDrained(time.Minute)
	r.report(fmt.Sprintf("; publishes %d acknowledged, %d failed (Redis down); longest outage %s",
		ok, fails, worst.Round(time.Millisecond)))
}

// buildSluice builds the sluice binary of this checkout.
func buildSluice(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sluicehq/sluice/cmd/sluice")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build sluice: %v", err)
	}
	return bin
}

// instance is one `sluice server` process on fixed loopback ports, so a restart comes back where
// clients expect it.
type instance struct {
	bin, redisURL         string
	publicPort, adminPort int
	flags                 []string // more flags of `sluice server`
	cmd                   *exec.Cmd
}

func startInstance(t *testing.T, bin, redisURL string, flags ...string) *instance {
	t.Helper()
	in := &instance{bin: bin, redisURL: redisURL, publicPort: freePort(t), adminPort: freePort(t), flags: flags}
	in.start(t)
	t.Cleanup(in.kill)
	return in
}

func (in *instance) publicURL() string { return "http://127.0.0.1:" + strconv.Itoa(in.publicPort) }
func (in *instance) adminURL() string  { return "http://127.0.0.1:" + strconv.Itoa(in.adminPort) }

// start runs the server and waits until /readyz answers 200.
func (in *instance) start(t *testing.T) {
	t.Helper()
	args := append([]string{"server", "--redis-url", in.redisURL, "--prefix", "chaos",
		"--public-addr", "127.0.0.1:" + strconv.Itoa(in.publicPort),
		"--admin-addr", "127.0.0.1:" + strconv.Itoa(in.adminPort), "--log-level", "error"}, in.flags...)
	cmd := exec.Command(in.bin, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sluice server: %v", err)
	}
	in.cmd = cmd
	testwait.UntilNil(t, 2*time.Minute, func() error {
		resp, err := http.Get(in.publicURL() + "/readyz")
		if err != nil {
			return fmt.Errorf("sluice server on %d not ready: %w", in.publicPort, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("sluice server on %d not ready: /readyz answers %d", in.publicPort, resp.StatusCode)
		}
		return nil
	})
}

func (in *instance) kill() {
	if in.cmd != nil {
		_ = in.cmd.Process.Kill()
		_, _ = in.cmd.Process.Wait()
	}
}

// adminSetup creates the chaos namespace and a publish token on the instance's admin API.
func adminSetup(t *testing.T, in *instance) string {
	t.Helper()
	in.admin(t, http.MethodPost, "/v1/namespaces", `{"name": "chaos"}`)
	tok := in.admin(t, http.MethodPost, "/v1/namespaces/chaos/tokens", `{"description": "chaos", "permissions": ["publish"]}`)
	s, _ := tok["token"].(string)
	if s == "" {
		t.Fatalf("no token in %v", tok)
	}
	return s
}

// admin sends a JSON request to the instance's admin API and returns its JSON answer, failing
// the test on anything but a 2xx.
func (in *instance) admin(t *testing.T, method, path, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, in.adminURL()+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %v %v", method, path, resp.StatusCode, out, err)
	}
	return out
}

// publishHTTP publishes job id through the native API and reports a 201.
func publishHTTP(hc *http.Client, base, token, id string) bool {
	body := `{"payload": {"id": "` + id + `"}, "tries": 1000}`
	req, err := http.NewRequest(http.MethodPost, base+"/v1/ns/chaos/queues/servers/jobs", bytes.NewBufferString(body))
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode == http.StatusCreated
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
