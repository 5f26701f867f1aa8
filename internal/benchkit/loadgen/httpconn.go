package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// httpConn is a minimal HTTP/1.1 keep-alive client connection: one request at a time, the
// request written straight from prepared bytes and the response body read into a buffer it
// reuses. It costs the load generator a fraction of net/http's CPU per request, which matters
// when the generator shares the machine with the server it measures.
type httpConn struct {
	target *endpoint
	c      net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	reused bool
	body   bytes.Buffer
	// header is scratch for the request line and headers.
	header []byte
}

// endpoint is where requests go: the one address the load generator talks to.
type endpoint struct {
	addr      string // host:port
	host      string // Host header
	tls       *tls.Config
	basePath  string // the URL's path, without its trailing slash
	authLines string // "Authorization: ...\r\n" or "X-Token: ...\r\n", or ""
}

func newEndpoint(raw string) (*endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	e := &endpoint{host: u.Host, basePath: trimSlash(u.Path)}
	port := u.Port()
	switch u.Scheme {
	case "http":
		port = cmpOr(port, "80")
	case "https":
		port = cmpOr(port, "443")
		e.tls = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	default:
		return nil, fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	e.addr = net.JoinHostPort(u.Hostname(), port)
	return e, nil
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// requestTimeout bounds one exchange, so a stuck server cannot hang the run.
const requestTimeout = 30 * time.Second

func (h *httpConn) dial(ctx context.Context) error {
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", h.target.addr)
	if err != nil {
		return err
	}
	if h.target.tls != nil {
		tc := tls.Client(c, h.target.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return err
		}
		c = tc
	}
	h.c, h.reused = c, false
	if h.br == nil {
		h.br = bufio.NewReaderSize(c, 16<<10)
		h.bw = bufio.NewWriterSize(c, 16<<10)
	} else {
		h.br.Reset(c)
		h.bw.Reset(c)
	}
	return nil
}

func (h *httpConn) close() {
	if h.c != nil {
		_ = h.c.Close()
		h.c = nil
	}
}

// errStale is a keep-alive connection the server closed before answering.
var errStale = errors.New("connection closed by the server")

// do sends one request and reads the response into h.body; it returns the status. A request on
// a reused connection the server had closed is sent once more on a new connection (nothing of
// it was answered).
func (h *httpConn) do(ctx context.Context, method, path, contentType string, body []byte) (int, error) {
	for attempt := 0; ; attempt++ {
		status, err := h.once(ctx, method, path, contentType, body)
		if err == nil {
			return status, nil
		}
		stale := errors.Is(err, errStale)
		h.close()
		if !stale || attempt > 0 || ctx.Err() != nil {
			return 0, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
}

func (h *httpConn) once(ctx context.Context, method, path, contentType string, body []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if h.c == nil {
		if err := h.dial(ctx); err != nil {
			return 0, err
		}
	}
	reused := h.reused
	h.reused = true
	if err := h.c.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, err
	}
	b := h.header[:0]
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, h.target.basePath...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, h.target.host...)
	b = append(b, "\r\nUser-Agent: sluice-bench\r\n"...)
	b = append(b, h.target.authLines...)
	if contentType != "" {
		b = append(b, "Content-Type: "...)
		b = append(b, contentType...)
		b = append(b, "\r\n"...)
	}
	if body != nil || method == "POST" || method == "PUT" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	h.header = b
	if _, err := h.bw.Write(b); err != nil {
		return 0, staleIf(reused, err)
	}
	if _, err := h.bw.Write(body); err != nil {
		return 0, staleIf(reused, err)
	}
	if err := h.bw.Flush(); err != nil {
		return 0, staleIf(reused, err)
	}
	return h.readResponse(reused)
}

func staleIf(reused bool, err error) error {
	if reused && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err)) {
		return fmt.Errorf("%w: %w", errStale, err)
	}
	return err
}

func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// readResponse reads a status line, headers and a body framed by Content-Length or chunked
// encoding.
func (h *httpConn) readResponse(reused bool) (int, error) {
	line, err := h.br.ReadSlice('\n')
	if err != nil {
		return 0, staleIf(reused, err)
	}
	// "HTTP/1.1 201 Created"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	length, chunked, closeAfter := int64(-1), false, false
	for {
		line, err := h.br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "content-length"):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "transfer-encoding"):
			chunked = asciiEqualFold(value, "chunked")
		case asciiEqualFold(name, "connection"):
			closeAfter = asciiEqualFold(value, "close")
		}
	}
	h.body.Reset()
	switch {
	case status == 204 || status == 304 || status < 200:
	case chunked:
		if err := h.readChunked(); err != nil {
			return 0, err
		}
	case length >= 0:
		if _, err := io.CopyN(&h.body, h.br, length); err != nil {
			return 0, err
		}
	default:
		// No framing: the body runs to the end of the connection.
		if _, err := h.body.ReadFrom(h.br); err != nil {
			return 0, err
		}
		closeAfter = true
	}
	if closeAfter {
		h.close()
	}
	return status, nil
}

func (h *httpConn) readChunked() error {
	for {
		line, err := h.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			// Trailers, then the empty line.
			for {
				line, err := h.br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := io.CopyN(&h.body, h.br, n); err != nil {
			return err
		}
		if _, err := h.br.Discard(2); err != nil { // CRLF after the chunk
			return err
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
