package outbound_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

// NotifyNextWrite, registered when a call has its connection, is called once per call (new
// connection or kept alive, plain or TLS), with a time within the call; a connection that is not
// a Sender's is refused.
func TestNotifyNextWriteTimesEachCallsRequest(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }
	plain := newTarget(t, ok)
	secure := httptest.NewTLSServer(http.HandlerFunc(ok))
	t.Cleanup(secure.Close)
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	s := newSender(t, outbound.Config{AllowPrivate: true, TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	for _, url := range []string{plain.URL, secure.URL, plain.URL, secure.URL} {
		var calls atomic.Int64
		var at atomic.Int64
		var watched atomic.Bool
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			watched.Store(outbound.NotifyNextWrite(info.Conn, func(t time.Time) {
				calls.Add(1)
				at.Store(t.UnixNano())
			}))
		}})
		start := time.Now()
		if _, err := s.Do(ctx, outbound.Request{URL: url}); err != nil {
			t.Fatal(err)
		}
		end := time.Now()
		if !watched.Load() || calls.Load() != 1 {
			t.Fatalf("%s: watched %v, called %d times; want once", url, watched.Load(), calls.Load())
		}
		if w := time.Unix(0, at.Load()); w.Before(start) || w.After(end) {
			t.Errorf("%s: written at %s, outside the call [%s, %s]", url, w, start, end)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if outbound.NotifyNextWrite(a, func(time.Time) {}) {
		t.Error("NotifyNextWrite accepted a connection no Sender dialed")
	}
}
