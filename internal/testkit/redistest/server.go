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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testproc"
)

// InstallHint is printed when redis-server is missing: tests need a real server.
const InstallHint = "redis-server is not installed; install it with: sudo apt-get install -y redis-server " +
	"(or set SLUICE_TEST_REDIS_URL to a Redis you run)"

// process is one redis-server child started for the tests, with its files in dir.
type process struct {
	*testproc.Process
	dir string
}

// stop kills the server and removes its data directory.
func (p *process) stop() {
	p.Kill()
	_ = os.RemoveAll(p.dir)
}

// startServer starts one redis-server on a free loopback port with the extra config lines given
// ("cluster-enabled yes", ...). A sentinel gets only the lines a sentinel understands and runs
// with --sentinel.
func startServer(sentinel bool, extra ...string) (*process, error) {
	dir, err := os.MkdirTemp("", "sluice-redistest-")
	if err != nil {
		return nil, err
	}
	var conf []string
	if !sentinel {
		conf = append(conf, "save \"\"", "appendonly no")
	}
	srv, err := newServer(dir, sentinel, append(conf, extra...))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p, err := srv.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &process{Process: p, dir: dir}, nil
}

// newServer writes dir/redis.conf, with the config lines given, for a redis-server that listens
// on loopback and keeps its files and its log in dir, and returns how to start it.
func newServer(dir string, sentinel bool, lines []string) (testproc.Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return testproc.Server{}, errors.New(InstallHint)
	}
	logPath := filepath.Join(dir, "redis.log")
	conf := append([]string{
		"bind 127.0.0.1",
		"dir " + dir,
		"loglevel warning",
		"logfile " + logPath,
	}, lines...)
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return testproc.Server{}, err
	}
	args := []string{confPath}
	if sentinel {
		args = append(args, "--sentinel")
	}
	return testproc.Server{
		Command: func(port int) *exec.Cmd {
			return exec.Command(bin, slices.Concat(args, []string{"--port", strconv.Itoa(port)})...)
		},
		Log:          logPath,
		Ready:        ping,
		ReadyTimeout: 10 * time.Second,
	}, nil
}

// ping sends PING over a raw connection and wants PONG.
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
