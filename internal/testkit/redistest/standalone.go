package redistest

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testproc"
)

// Server is a redis-server of one test, for tests that stop and restart Redis under the code they
// test. Its data directory survives Stop and Restart (it runs with append-only persistence), so a
// restart brings the data back.
type Server struct {
	t    testing.TB
	srv  testproc.Server
	port int

	mu   sync.Mutex
	proc *testproc.Process // nil while stopped
}

// StartServer starts a redis-server for the test on a free loopback port, with append-only
// persistence and the extra config lines given. It is killed when the test ends.
func StartServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	srv, err := newServer(t.TempDir(), false, append([]string{"save \"\"", "appendonly yes", "appendfsync always"}, extra...))
	if err != nil {
		t.Fatal(err)
	}
	p, err := srv.Start()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s := &Server{t: t, srv: srv, port: p.Port, proc: p}
	t.Cleanup(s.Kill)
	return s
}

// Addr is the server's loopback address.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Stop shuts the server down (SIGTERM: it flushes its append-only file) and waits for it to exit.
func (s *Server) Stop() {
	if p := s.take(); p != nil {
		p.Terminate()
	}
}

// Restart starts the stopped server again on the same port and data directory.
func (s *Server) Restart() {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := s.srv.StartOn(s.port)
		if err == nil {
			s.mu.Lock()
			s.proc = p
			s.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the port may still be in TIME_WAIT or taken for a moment
	}
}

// Kill SIGKILLs the server (no shutdown: what the append-only file has is what survives) and waits
// for it to exit. Restart starts it again.
func (s *Server) Kill() {
	if p := s.take(); p != nil {
		p.Kill()
	}
}

// take returns the running server process, which the caller is to stop, and forgets it.
func (s *Server) take() *testproc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	s.proc = nil
	return p
}
