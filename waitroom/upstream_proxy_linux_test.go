package waitroom

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"
)

// TestUpstreamProxyDialTimeout: an upstream that does not accept connections (a listen queue of
// one, already taken) is a 502 once UpstreamDialTimeout passes.
func TestUpstreamProxyDialTimeout(t *testing.T) {
	t.Parallel()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	first, err := net.Dial("tcp", addr) // fills the queue: nobody accepts it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close() })

	failed := make(chan error, 1)
	_, site := newTestProxy(t, &url.URL{Scheme: "http", Host: addr}, upstreamProxyConfig{
		DialTimeout: 100 * time.Millisecond,
		Fail: func(w http.ResponseWriter, r *http.Request, err error) {
			failed <- err
			testFail(w, r, err)
		},
	})
	r := send(t, site.Listener.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	var ne net.Error
	if err := <-failed; r.statuses[0] != http.StatusBadGateway || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("unreachable upstream: %+v, error %v", r, err)
	}
}
