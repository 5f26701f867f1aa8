package outbound_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

// newSender returns a Sender for tests; targets are httptest servers on loopback, so private
// addresses are allowed unless cfg says otherwise through setup.
func newSender(t *testing.T, cfg outbound.Config) *outbound.Sender {
	t.Helper()
	s, err := outbound.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func newTarget(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestDoSendsTheRequestAndReadsTheResponse(t *testing.T) {
	t.Parallel()
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-Agent", r.UserAgent())
		w.Header().Set("X-Custom", r.Header.Get("X-Custom"))
		w.Header().Set("X-Query", r.URL.RawQuery)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(append([]byte("echo:"), body...))
	})
	s := newSender(t, outbound.Config{AllowPrivate: true, UserAgent: "sluice-test"})
	resp, err := s.Do(t.Context(), outbound.Request{
		Method: http.MethodPut,
		URL:    srv.URL + "/job?a=1",
		Header: http.Header{"X-Custom": {"yes"}},
		Body:   []byte("hello"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusCreated || string(resp.Body) != "echo:hello" || resp.Truncated {
		t.Fatalf("resp = %d %q truncated=%v", resp.Status, resp.Body, resp.Truncated)
	}
	for k, want := range map[string]string{"X-Method": "PUT", "X-Agent": "sluice-test", "X-Custom": "yes", "X-Query": "a=1"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if resp.Duration <= 0 {
		t.Errorf("Duration = %v, want > 0", resp.Duration)
	}
	if o, _ := outbound.Classify(resp, err); o != outbound.Success {
		t.Errorf("Classify = %v, want success", o)
	}
}

func TestDoClassifiesStatuses(t *testing.T) {
	t.Parallel()
	retryAt := time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat)
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusNoContent)
		case "/500":
			w.WriteHeader(http.StatusInternalServerError)
		case "/503-date":
			w.Header().Set("Retry-After", retryAt)
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/429":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/404":
			w.WriteHeader(http.StatusNotFound)
		case "/400":
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	s := newSender(t, outbound.Config{AllowPrivate: true})
	for _, tc := range []struct {
		path     string
		want     outbound.Outcome
		min, max time.Duration
	}{
		{"/ok", outbound.Success, 0, 0},
		{"/500", outbound.Retry, 0, 0},
		{"/503-date", outbound.Retry, 100 * time.Second, 2 * time.Minute},
		{"/429", outbound.Retry, 7 * time.Second, 7 * time.Second},
		{"/404", outbound.Final, 0, 0},
		{"/400", outbound.Final, 0, 0},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			t.Parallel()
			resp, err := s.Do(t.Context(), outbound.Request{Method: http.MethodPost, URL: srv.URL + tc.path})
			if err != nil {
				t.Fatal(err)
			}
			o, after := outbound.Classify(resp, err)
			if o != tc.want || after < tc.min || after > tc.max {
				t.Fatalf("Classify = %v, %v; want %v in [%v, %v]", o, after, tc.want, tc.min, tc.max)
			}
		})
	}
}

func TestDoDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Bool
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	s := newSender(t, outbound.Config{AllowPrivate: true})
	resp, err := s.Do(t.Context(), outbound.Request{URL: srv.URL + "/start"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusFound || resp.Header.Get("Location") != "/elsewhere" || followed.Load() {
		t.Fatalf("status %d, location %q, followed %v", resp.Status, resp.Header.Get("Location"), followed.Load())
	}
	if o, _ := outbound.Classify(resp, err); o != outbound.Final {
		t.Fatalf("Classify = %v, want final", o)
	}
}

func TestDoTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close: a handler never outlives the test
	s := newSender(t, outbound.Config{AllowPrivate: true, Timeout: time.Hour})
	resp, err := s.Do(t.Context(), outbound.Request{URL: srv.URL, Timeout: 50 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if o, _ := outbound.Classify(resp, err); o != outbound.Retry {
		t.Fatalf("Classify = %v, want retry", o)
	}
}

func TestDoConnectionErrorIsRetried(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	s := newSender(t, outbound.Config{AllowPrivate: true})
	resp, err := s.Do(t.Context(), outbound.Request{URL: "http://" + addr + "/"})
	if err == nil {
		t.Fatal("call to a closed port succeeded")
	}
	if errors.Is(err, outbound.ErrDestinationRefused) {
		t.Fatalf("err = %v: a connection error is not a refused destination", err)
	}
	if o, _ := outbound.Classify(resp, err); o != outbound.Retry {
		t.Fatalf("Classify = %v, want retry", o)
	}
}

func TestDoTruncatesLargeBodies(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789"), 500)
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/exact" {
			_, _ = w.Write(big[:1000])
			return
		}
		_, _ = w.Write(big)
	})
	s := newSender(t, outbound.Config{AllowPrivate: true, MaxResponseBytes: 1000})
	resp, err := s.Do(t.Context(), outbound.Request{URL: srv.URL + "/big"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Truncated || !bytes.Equal(resp.Body, big[:1000]) {
		t.Fatalf("truncated=%v len=%d, want the first 1000 bytes", resp.Truncated, len(resp.Body))
	}
	resp, err = s.Do(t.Context(), outbound.Request{URL: srv.URL + "/exact"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Truncated || len(resp.Body) != 1000 {
		t.Fatalf("exact limit: truncated=%v len=%d", resp.Truncated, len(resp.Body))
	}
}

func TestDoRefusesPrivateAddressesAtDial(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	strict := newSender(t, outbound.Config{})
	// "localhost" passes any check made on the URL's text; only the dialled address shows where
	// it goes, which is what a DNS-rebinding name relies on.
	for _, u := range []string{
		"http://localhost:" + port + "/",
		"http://127.0.0.1:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
	} {
		resp, err := strict.Do(t.Context(), outbound.Request{URL: u})
		if !errors.Is(err, outbound.ErrDestinationRefused) {
			t.Fatalf("%s: err = %v, want ErrDestinationRefused", u, err)
		}
		if o, _ := outbound.Classify(resp, err); o != outbound.Final {
			t.Fatalf("%s: Classify = %v, want final", u, o)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("target got %d calls while refused", n)
	}
	open := newSender(t, outbound.Config{AllowPrivate: true})
	if _, err := open.Do(t.Context(), outbound.Request{URL: "http://localhost:" + port + "/"}); err != nil {
		t.Fatalf("AllowPrivate: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("target got %d calls, want 1", n)
	}
}

func TestDoRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	s := newSender(t, outbound.Config{AllowPrivate: true})
	for _, req := range []outbound.Request{
		{URL: "ftp://example.com/x"},
		{URL: "/relative"},
		{URL: "http://"},
		{URL: "http://example.com/", Method: "BAD METHOD"},
		{URL: "http://example.com/", Timeout: -time.Second},
	} {
		resp, err := s.Do(t.Context(), req)
		if !errors.Is(err, outbound.ErrInvalidRequest) {
			t.Errorf("%+v: err = %v, want ErrInvalidRequest", req, err)
		}
		if o, _ := outbound.Classify(resp, err); o != outbound.Final {
			t.Errorf("%+v: Classify = %v, want final", req, o)
		}
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]outbound.Config{
		"MaxResponseBytes": {MaxResponseBytes: -1},
		"Timeout":          {Timeout: -1},
		"DialTimeout":      {DialTimeout: -1},
	} {
		if _, err := outbound.New(cfg); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want one naming the field", name, err)
		}
	}
}

func TestDoErrorsDoNotLeakQueryOrUserinfo(t *testing.T) {
	t.Parallel()
	s := newSender(t, outbound.Config{})
	_, err := s.Do(t.Context(), outbound.Request{URL: "http://user:pw@localhost:1/x?token=secret"})
	if err == nil {
		t.Fatal("want an error")
	}
	if msg := err.Error(); strings.Contains(msg, "secret") || strings.Contains(msg, "pw") {
		t.Fatalf("error leaks credentials: %s", msg)
	}
}

func TestDoHTTPSWithTheConfiguredRoots(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Proto))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	trusting := newSender(t, outbound.Config{AllowPrivate: true, TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	resp, err := trusting.Do(t.Context(), outbound.Request{URL: srv.URL})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("status %d, err %v", resp.Status, err)
	}
	// Without the test CA the certificate is refused, and that is not a refused destination.
	strict := newSender(t, outbound.Config{AllowPrivate: true})
	resp, err = strict.Do(t.Context(), outbound.Request{URL: srv.URL})
	if err == nil || errors.Is(err, outbound.ErrDestinationRefused) {
		t.Fatalf("untrusted certificate: err = %v", err)
	}
	if o, _ := outbound.Classify(resp, err); o != outbound.Retry {
		t.Fatalf("Classify = %v, want retry", o)
	}
}
