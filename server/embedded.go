package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// embeddedRedis is the Redis of embedded mode: a managed redis-server child with append-only
// persistence in DataDir, or, when no redis-server binary is found, an in-process store.
type embeddedRedis struct {
	url string
	// managed is true for a redis-server child, false for the in-process store.
	managed bool
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the child exits
	lock    *os.File      // the data dir lock, held while the child runs
	// stopping is set by stop, so the child's exit is not reported as a crash.
	stopping atomic.Bool
	mini     *miniredis.Miniredis
}

// inProcessWarning is logged (and printed) when the in-process store is used.
const inProcessWarning = "NO redis-server FOUND: running on an IN-PROCESS store. NOTHING SURVIVES A RESTART: " +
	"every job, namespace and token is lost when this process stops. Install redis-server (or set redis_url) for real use."

// startEmbedded starts the embedded Redis.
func startEmbedded(ctx context.Context, cfg Config) (*embeddedRedis, error) {
	bin, err := exec.LookPath(cfg.RedisServerPath)
	if err != nil {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("server: in-process store: %w", err)
		}
		cfg.Logger.Warn(inProcessWarning, "redis_server_path", cfg.RedisServerPath)
		fmt.Fprintf(cfg.Out, "\n!!! WARNING: %s\n\n", inProcessWarning)
		return &embeddedRedis{url: "redis://" + m.Addr(), mini: m}, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: data dir: %w", err)
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("server: data dir: %w", err)
	}
	lock, err := lockDataDir(dir)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 { // a free port can be taken between the probe and the bind
		e, err := startManaged(ctx, bin, dir, cfg.Logger)
		if err == nil {
			e.lock = lock
			cfg.Logger.Info("embedded redis-server started", "addr", e.url, "data_dir", dir, "appendonly", true)
			return e, nil
		}
		lastErr = err
	}
	if lock != nil {
		_ = lock.Close()
	}
	return nil, lastErr
}

func startManaged(ctx context.Context, bin, dir string, log *slog.Logger) (*embeddedRedis, error) {
	port, err := freePort(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--daemonize", "no",
		"--dir", dir,
		"--appendonly", "yes",
		"--appendfsync", "everysec",
		"--maxmemory-policy", "noeviction",
		"--logfile", "redis.log",
	}
	// The child outlives ctx (New's): stop ends it.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), bin, args...) //nolint:gosec // the operator names the binary (redis_server_path)
	cmd.Dir = dir
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("server: start %s: %w", bin, err)
	}
	e := &embeddedRedis{
		url:     "redis://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		managed: true,
		cmd:     cmd,
		exited:  make(chan struct{}),
	}
	go func() {
		err := cmd.Wait()
		if !e.stopping.Load() {
			log.Error("embedded redis-server exited; requests fail with 503 until sluice server is restarted",
				"error", err, "log", filepath.Join(dir, "redis.log"))
		}
		close(e.exited)
	}()
	if err := e.waitReady(ctx, addrOf(port), 15*time.Second); err != nil {
		_ = e.stop()
		logTail, _ := os.ReadFile(filepath.Join(dir, "redis.log")) //nolint:gosec // our own data dir
		if len(logTail) > 2000 {
			logTail = logTail[len(logTail)-2000:]
		}
		return nil, fmt.Errorf("server: embedded redis-server did not start: %w\n%s", err, logTail)
	}
	return e, nil
}

func addrOf(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// waitReady pings the child until it answers (it may first replay a large AOF).
func (e *embeddedRedis) waitReady(ctx context.Context, addr string, timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-e.exited:
			return errors.New("redis-server exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %s: %w", timeout, err)
		}
	}
}

// stop stops the embedded Redis: SIGTERM for the child (it flushes its append-only file), then
// SIGKILL if it has not exited within 10 seconds.
func (e *embeddedRedis) stop() error {
	if e.mini != nil {
		e.mini.Close()
		return nil
	}
	if e.cmd == nil || e.cmd.Process == nil {
		return nil
	}
	e.stopping.Store(true)
	defer func() {
		if e.lock != nil {
			_ = e.lock.Close()
		}
	}()
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.exited
		return errors.New("server: embedded redis-server did not stop on SIGTERM; killed it")
	}
}

func freePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("server: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
