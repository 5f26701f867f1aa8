package redistest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a redis-server of one test, for tests that stop and restart Redis under the code they
// test. Its data directory survives Stop and Restart (it runs with append-only persistence), so a
// restart brings the data back.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartServer starts a redis-server for the test on a free loopback port, with append-only
// persistence and the extra config lines given. It is killed when the test ends.
func StartServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(InstallHint)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	conf := append([]string{
		"bind 127.0.0.1",
		"save \"\"",
		"appendonly yes",
		"appendfsync always",
		"dir " + s.dir,
		"loglevel warning",
		"logfile " + filepath.Join(s.dir, "redis.log"),
	}, extra...)
	if err := os.WriteFile(filepath.Join(s.dir, "redis.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 5 {
		if s.port, lastErr = freePort(); lastErr != nil {
			continue
		}
		if lastErr = s.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("redistest: %v", lastErr)
	}
	t.Cleanup(s.kill)
	return s
}

// Addr is the server's loopback address.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

func (s *Server) start() error {
	cmd := exec.Command(s.bin, filepath.Join(s.dir, "redis.conf"), "--port", strconv.Itoa(s.port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := waitReady(s.Addr(), 10*time.Second); err != nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		return errors.New("redis-server did not start: " + err.Error() + "\n" + string(log))
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	return nil
}

// Stop shuts the server down (SIGTERM: it flushes its append-only file) and waits for it to exit.
func (s *Server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_, _ = cmd.Process.Wait()
}

// Restart starts the stopped server again on the same port and data directory.
func (s *Server) Restart() {
	s.t.Helper()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err = s.start(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the port may still be in TIME_WAIT or taken for a moment
	}
	if err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// Kill SIGKILLs the server (no shutdown: what the append-only file has is what survives) and waits
// for it to exit. Restart starts it again.
func (s *Server) Kill() { s.kill() }

func (s *Server) kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
}
