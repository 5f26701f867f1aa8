// Package flakyproxy is a TCP proxy between a Redis client and a real redis-server that loses the
// replies of chosen commands: the server runs the command, the client never hears its answer and,
// like go-redis after a read timeout or a broken connection, sends it again. Tests use it to prove
// that a state-changing script has its effect once when it arrives twice.
package flakyproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// Match decides from a command's arguments (the command name first, as sent) whether a rule
// applies to it.
type Match func(args []string) bool

// FunctionCall matches the FCALL or FCALL_RO of a library function whose name ends with
// "_"+name (Sluice's functions are named library_version_script).
func FunctionCall(name string) Match {
	return func(args []string) bool {
		if len(args) < 2 {
			return false
		}
		cmd := strings.ToLower(args[0])
		return (cmd == "fcall" || cmd == "fcall_ro") && strings.HasSuffix(args[1], "_"+name)
	}
}

// Rule drops the replies of the next commands its match accepts, up to a count.
type Rule struct {
	match   Match
	left    atomic.Int64
	dropped atomic.Int64
}

// Dropped is how many replies the rule dropped so far.
func (r *Rule) Dropped() int { return int(r.dropped.Load()) }

// take reports whether the command's reply is to be dropped, counting it.
func (r *Rule) take(args []string) bool {
	if !r.match(args) {
		return false
	}
	for {
		left := r.left.Load()
		if left <= 0 {
			return false
		}
		if r.left.CompareAndSwap(left, left-1) {
			r.dropped.Add(1)
			return true
		}
	}
}

// Proxy listens on loopback and forwards every connection to its target.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	rules []*Rule
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Start starts a proxy to target (host:port) for the test; it stops when the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("flakyproxy: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's address (host:port): what the client dials instead of the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// DropReplies drops the replies of the next n commands match accepts: the server runs each of
// them, and the proxy closes the client's connection where the reply would have been, as a
// network failure after the command reached the server would.
func (p *Proxy) DropReplies(match Match, n int) *Rule {
	r := &Rule{match: match}
	r.left.Store(int64(n))
	p.mu.Lock()
	p.rules = append(p.rules, r)
	p.mu.Unlock()
	return r
}

// drops reports whether the reply to a command with args is to be dropped.
func (p *Proxy) drops(args []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if r.take(args) {
			return true
		}
	}
	return false
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client, true)
		p.track(server, true)
		p.wg.Add(1)
		go p.serve(client, server)
	}
}

// serve forwards one connection. The commands' decisions travel in order from the client side to
// the server side: Redis answers a connection's commands in the order they came (push messages,
// which answer no command, pass through).
func (p *Proxy) serve(client, server net.Conn) {
	defer p.wg.Done()
	decisions := make(chan bool, 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(decisions)
		copyUnits(client, server, func(r *bufio.Reader, raw *bytes.Buffer) (bool, error) {
			args, err := readCommand(r, raw)
			if err == nil {
				decisions <- p.drops(args)
			}
			return true, err
		})
		_ = server.Close()
	}()
	copyUnits(server, client, func(r *bufio.Reader, raw *bytes.Buffer) (bool, error) {
		typ, err := readValue(r, raw)
		// A dropped reply: the server ran the command; its answer is lost with the connection.
		return typ == '>' || !<-decisions, err
	})
	_ = client.Close()
	_ = server.Close()
	wg.Wait()
	p.track(client, false)
	p.track(server, false)
}

// copyUnits copies RESP units (commands or replies) from src to dst, each read whole by read, until
// a read fails or read refuses its unit (pass false: the connection is to be cut there).
func copyUnits(src io.Reader, dst io.Writer, read func(r *bufio.Reader, raw *bytes.Buffer) (pass bool, err error)) {
	r := bufio.NewReader(src)
	var raw bytes.Buffer
	for {
		raw.Reset()
		pass, err := read(r, &raw)
		if err != nil || !pass {
			return
		}
		if _, err := dst.Write(raw.Bytes()); err != nil {
			return
		}
	}
}

// readCommand reads one command (a RESP array of bulk strings) into raw and returns its
// arguments.
func readCommand(r *bufio.Reader, raw *bytes.Buffer) ([]string, error) {
	line, err := readLine(r, raw)
	if err != nil {
		return nil, err
	}
	if line[0] != '*' {
		return strings.Fields(string(line)), nil // an inline command
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil {
		return nil, fmt.Errorf("flakyproxy: bad array header %q", line)
	}
	args := make([]string, 0, n)
	for range n {
		start := raw.Len()
		if _, err := readValue(r, raw); err != nil {
			return nil, err
		}
		v := raw.Bytes()[start:]
		if i := bytes.IndexByte(v, '\n'); i >= 0 && len(v) >= i+3 {
			v = v[i+1 : len(v)-2]
		}
		args = append(args, string(v))
	}
	return args, nil
}

// readValue reads one RESP2 or RESP3 value into raw and returns its type byte.
func readValue(r *bufio.Reader, raw *bytes.Buffer) (byte, error) {
	line, err := readLine(r, raw)
	if err != nil {
		return 0, err
	}
	typ := line[0]
	switch typ {
	case '$', '!', '=': // bulk string, bulk error, verbatim string
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return 0, err
		}
		if n >= 0 {
			if _, err := io.CopyN(raw, r, int64(n)+2); err != nil {
				return 0, err
			}
		}
	case '*', '~', '>', '%', '|': // array, set, push; map and attribute hold pairs
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return 0, err
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for range max(n, 0) {
			if _, err := readValue(r, raw); err != nil {
				return 0, err
			}
		}
		if typ == '|' { // an attribute comes before the value it describes
			return readValue(r, raw)
		}
	}
	return typ, nil
}

// readLine reads one CRLF-ended line into raw and returns it without the CRLF.
func readLine(r *bufio.Reader, raw *bytes.Buffer) ([]byte, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	raw.Write(line)
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return nil, errors.New("flakyproxy: empty line")
	}
	return line, nil
}

// NewClient returns a client of env's standalone server that reaches it through a new proxy, and
// the proxy. The client is closed when the test ends.
func NewClient(t testing.TB, env *redistest.Env) (*redis.Client, *Proxy) {
	t.Helper()
	opts := redistest.StandaloneOptions(t, env)
	p := Start(t, opts.Addr)
	opts.Addr = p.Addr()
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client, p
}
