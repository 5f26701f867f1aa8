// Package redistest gives tests a real Redis: a redis-server (or a 3-master Redis Cluster) started
// once per test binary on a free loopback port, and a key prefix per test so that tests run in
// parallel against one server without seeing each other's keys.
//
// Tests never mock Redis. A machine without redis-server fails the test with the command that
// installs it; it never skips. Set SLUICE_TEST_REDIS_URL to use a server you run yourself
// (and SLUICE_TEST_REDIS_CLUSTER_URL for a cluster, in the redisx URL form).
//
// Tests that kill Redis under the code they test get processes of their own: StartServer (one
// server with append-only persistence, to kill and restart), StartSentinel (a primary, a replica
// and three sentinels, to fail over) and StartCluster (a cluster of n masters).
//
// Use Main from TestMain so the servers stop when the tests end:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// InstallHint is printed when redis-server is missing: tests need a real server.
const InstallHint = "redis-server is not installed; install it with: sudo apt-get install -y redis-server " +
	"(or set SLUICE_TEST_REDIS_URL to a Redis you run)"

// process is one redis-server child started for the tests.
type process struct {
	cmd  *exec.Cmd
	dir  string
	port int
}

// Addr is the loopback address the server listens on.
func (p *process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// kill sends SIGKILL and waits for the process to exit; its data directory stays.
func (p *process) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_, _ = p.cmd.Process.Wait()
	}
}

// stop kills the server and removes its data directory.
func (p *process) stop() {
	p.kill()
	_ = os.RemoveAll(p.dir)
}

// startServer starts one redis-server on a free loopback port with the extra config lines given
// ("cluster-enabled yes", ...). It retries a few times: a free port can be taken between the probe
// and the bind.
func startServer(extra ...string) (*process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New(InstallHint)
	}
	var lastErr error
	for range 5 {
		p, err := tryStart(bin, false, extra)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// tryStart starts one server; a sentinel gets only the lines a sentinel understands and runs with
// --sentinel.
func tryStart(bin string, sentinel bool, extra []string) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-redistest-")
	if err != nil {
		return nil, err
	}
	conf := []string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"dir " + dir,
		"loglevel warning",
		"logfile " + filepath.Join(dir, "redis.log"),
	}
	if !sentinel {
		conf = append(conf, "save \"\"", "appendonly no")
	}
	conf = append(conf, extra...)
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	args := []string{confPath}
	if sentinel {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(bin, args...)
	// The server dies with the test binary even when TestMain never gets to stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	p := &process{cmd: cmd, dir: dir, port: port}
	if err := waitReady(p.Addr(), 10*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		p.stop()
		return nil, fmt.Errorf("redis-server on port %d did not start: %w\n%s", port, err, log)
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady pings the server over a raw connection until it answers PONG.
func waitReady(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		lastErr = ping(addr)
		if lastErr == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return lastErr
}

func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
	}
	return nil
}
