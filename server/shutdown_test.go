package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// inFlight is the number of requests the public listener is serving.
func (ts *testServer) inFlight() float64 {
	var m dto.Metric
	_ = ts.srv.metrics.inflight.WithLabelValues("public").Write(&m)
	return m.GetGauge().GetValue()
}

func TestShutdownReleasesBlockedConsume(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := New(ctx, Config{RedisURL: env.URL, Prefix: env.Prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, pub, adm) }()
	ts := &testServer{srv: srv, PublicURL: "http://" + pub.Addr().String(), Tokens: srv.tokens, Queue: srv.queue}
	tok := ts.token(t, "shop")
	got := make(chan response, 1)
	go func() {
		got <- ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "timeout": 50})
	}()
	testwait.Until(t, time.Minute, "the consume to be in flight", func() bool { return ts.inFlight() == 1 })
	cancel()
	select {
	case r := <-got:
		wantStatus(t, r, http.StatusOK, "")
		if strings.TrimSpace(string(r.Body)) != `{"jobs":[]}` {
			t.Fatalf("released consume = %s", r.Body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("shutdown did not release the blocked consume")
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	// The listeners are closed: new connections are refused.
	if c, err := net.Dial("tcp", pub.Addr().String()); err == nil {
		c.Close()
		t.Fatal("public listener still accepts after shutdown")
	}
}

func TestConsumeEndsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	ctx, cancel := context.WithCancel(ctxT(t))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.PublicURL+"/v1/ns/shop/consume",
		strings.NewReader(`{"queues": ["emails"], "timeout": 50}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	testwait.Until(t, time.Minute, "the consume to be in flight", func() bool { return ts.inFlight() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}
	testwait.Until(t, time.Minute, "the server to end the abandoned consume", func() bool { return ts.inFlight() == 0 })
}
