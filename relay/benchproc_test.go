package relay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/relay"
)

// benchRoleEnv makes a re-executed test binary play one part of a benchmark in a process of its
// own, as in a deployment: "dispatcher" (a Client and a Dispatcher on the Redis and prefix of
// benchRedisEnv and benchPrefixEnv) or "target" (an HTTP server that records when calls arrive).
// Each runs until its standard input closes, then writes what it measured to standard output.
const (
	benchRoleEnv   = "SLUICE_RELAY_BENCH_ROLE"
	benchRedisEnv  = "SLUICE_RELAY_BENCH_REDIS"
	benchPrefixEnv = "SLUICE_RELAY_BENCH_PREFIX"
)

// runBenchRole plays the part named by benchRoleEnv and returns the exit code.
func runBenchRole(role string) int {
	var err error
	switch role {
	case "dispatcher":
		err = runBenchDispatcher(os.Getenv(benchRedisEnv), os.Getenv(benchPrefixEnv))
	case "target":
		err = runBenchTarget()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench", role+":", err)
		return 1
	}
	return 0
}

// runBenchDispatcher runs a Dispatcher until standard input closes, then stops it (draining) and
// writes its stats as JSON.
func runBenchDispatcher(url, prefix string) error {
	rdb, err := redisx.NewClient(url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	c, err := relay.NewClient(rdb, relay.Config{Prefix: prefix, PermitKeys: [][]byte{testKey}})
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := relay.NewDispatcher(c, relay.DispatcherConfig{Workers: 16, AllowPrivate: true})
	if err != nil {
		return err
	}
	if err := d.Start(context.Background()); err != nil {
		return err
	}
	fmt.Println("started")
	_, _ = io.Copy(io.Discard, os.Stdin)
	d.Stop()
	return json.NewEncoder(os.Stdout).Encode(d.Stats())
}

// benchArrival is a call as the target saw it (Unix ns): when its first bytes reached the
// target's socket (the kernel's receive time), and when the target's handler had read it.
type benchArrival struct {
	Received int64 `json:"received"`
	Handled  int64 `json:"handled"`
}

// runBenchTarget serves calls that take 20 ms and records each one's arrival twice: the kernel's
// receive time of its first bytes (SO_TIMESTAMPNS: when it reached the target, whatever the
// target process was doing) and the time its handler had read it (which adds the target's own
// scheduling). It writes its URL as its first line, and when standard input closes the arrivals
// as JSON.
func runBenchTarget() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var arrivals []benchArrival
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				ts, err := newStampedConn(conn.(*net.TCPConn))
				if err != nil {
					fmt.Fprintln(os.Stderr, "bench target:", err)
					return
				}
				br := bufio.NewReader(ts)
				for {
					ts.first = 0
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, r.Body)
					handled := time.Now().UnixNano()
					mu.Lock()
					arrivals = append(arrivals, benchArrival{ts.first, handled})
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"); err != nil {
						return
					}
				}
			}()
		}
	}()
	fmt.Printf("http://%s/\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = ln.Close()
	mu.Lock()
	defer mu.Unlock()
	return json.NewEncoder(os.Stdout).Encode(arrivals)
}

// stampedConn reads a TCP connection with recvmsg and keeps the kernel's receive time of the
// first read since first was cleared.
type stampedConn struct {
	raw   syscall.RawConn
	oob   []byte
	first int64
}

func newStampedConn(c *net.TCPConn) (*stampedConn, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	return &stampedConn{raw: raw, oob: make([]byte, 128)}, nil
}

func (c *stampedConn) Read(p []byte) (int, error) {
	var n, oobn int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, c.oob, 0)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	if c.first == 0 {
		msgs, _ := syscall.ParseSocketControlMessage(c.oob[:oobn])
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
				c.first = ts.Nano()
			}
		}
		if c.first == 0 {
			c.first = time.Now().UnixNano()
		}
	}
	return n, nil
}

// benchProc is a test binary re-executed to play a role.
type benchProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startBenchProc starts a process playing role and returns it once it wrote its first line (the
// target's URL, or a dispatcher's "started").
func startBenchProc(b *testing.B, role string, env ...string) (*benchProc, string) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, benchRoleEnv+"="+role)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", role, err)
	}
	p := &benchProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	b.Cleanup(func() {
		_ = p.stdin.Close()
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	line, err := p.out.ReadString('\n')
	if err != nil {
		b.Fatalf("%s: %v", role, err)
	}
	return p, strings.TrimSpace(line)
}

// finish closes the process's input and decodes what it writes then into v.
func (p *benchProc) finish(b *testing.B, v any) {
	b.Helper()
	_ = p.stdin.Close()
	if err := json.NewDecoder(p.out).Decode(v); err != nil {
		b.Fatalf("read %s: %v", p.cmd.Env[len(p.cmd.Env)-1], err)
	}
	_ = p.cmd.Wait()
}
