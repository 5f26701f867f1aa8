// Package testproc runs the server processes the test harnesses start (redistest's redis-servers,
// mysqltest's mariadbd): on a free loopback port, waited for until they answer, and killed with
// the test binary even when TestMain never gets to stop them.
package testproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Server says how to start a server process and how to tell that it is ready.
type Server struct {
	// Command returns the server's command, set to listen on 127.0.0.1:port.
	Command func(port int) *exec.Cmd
	// Log is the server's log file, quoted in the error when the server does not start.
	Log string
	// Ready succeeds once the server at addr answers.
	Ready func(addr string) error
	// ReadyTimeout is how long Ready may keep failing before the start fails.
	ReadyTimeout time.Duration
}

// starts is how many free ports Start tries.
const starts = 5

// Start starts the server on a free loopback port. It tries a few ports: a port found free can be
// taken by another process before the server binds it.
func (s Server) Start() (*Process, error) {
	var lastErr error
	for range starts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p, err := s.StartOn(port)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// StartOn starts the server on port and waits until it is ready. A server that exits first, or
// is not ready within ReadyTimeout, is killed.
func (s Server) StartOn(port int) (*Process, error) {
	cmd := s.Command(port)
	// The server dies with the test binary even when TestMain never gets to stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	name := filepath.Base(cmd.Path)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Port: port, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(s.ReadyTimeout, s.Ready); err != nil {
		p.Kill()
		log, _ := os.ReadFile(s.Log)
		return nil, fmt.Errorf("%s on port %d did not start: %w\n%s", name, port, err, log)
	}
	return p, nil
}

// Process is a running server.
type Process struct {
	// Port is the loopback port the server listens on.
	Port int

	cmd    *exec.Cmd
	exited chan struct{}
}

// Addr is the loopback address the server listens on.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) }

// waitReady calls ready every 20ms until it succeeds, the server exits, or timeout passes.
func (p *Process) waitReady(timeout time.Duration, ready func(addr string) error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready(p.Addr())
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return errors.New("the server exited")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// PID is the server process's id (for its CPU time, say).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Kill SIGKILLs the server (no shutdown) and waits for it to exit.
func (p *Process) Kill() { p.signal(syscall.SIGKILL) }

// Terminate sends SIGTERM, which lets the server shut down in order, and waits for it to exit.
func (p *Process) Terminate() { p.signal(syscall.SIGTERM) }

func (p *Process) signal(sig os.Signal) {
	_ = p.cmd.Process.Signal(sig)
	<-p.exited
}

// freePort returns a loopback TCP port no one listens on at the moment.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
