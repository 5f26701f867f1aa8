package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Prefix: "a:b"}, "prefix"},
		{Config{MaxBodyBytes: 10}, "max_body_bytes"},
		{Config{MaxConsumeTimeout: -1}, "max_consume_timeout"},
		{Config{ShutdownTimeout: -1}, "shutdown_timeout"},
		{Config{TokenCacheTTL: 2 * time.Second}, "token_cache_ttl"},
		{Config{MetricsMaxQueues: -1}, "metrics_max_queues"},
		{Config{MaintainInterval: -1}, "maintain_interval"},
		{Config{RoomUpstreamHeaderTimeout: -time.Second}, "room_upstream_header_timeout"},
		{Config{RoomUpstreamDialTimeout: -time.Second}, "room_upstream_dial_timeout"},
		{Config{PublicAddr: "7777"}, "public_addr"},
		{Config{AdminAddr: "nohost"}, "admin_addr"},
		{Config{AdminAddr: ":7778"}, "admin_token"},
		{Config{AdminAddr: "10.0.0.1:7778"}, "admin_token"},
	} {
		err := c.cfg.withDefaults().validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("validate(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	for _, ok := range []Config{
		{}, {AdminAddr: "localhost:7778"}, {AdminAddr: "[::1]:7778"}, {AdminAddr: ":7778", AdminToken: "x"},
	} {
		if err := ok.withDefaults().validate(); err != nil {
			t.Errorf("validate(%+v) = %v", ok, err)
		}
	}
	if got := baseURL(":7777"); got != "http://localhost:7777" {
		t.Errorf("baseURL(:7777) = %s", got)
	}
	if got := baseURL("[::]:7777"); got != "http://localhost:7777" {
		t.Errorf("baseURL([::]:7777) = %s", got)
	}
	if got := baseURL("127.0.0.1:7778"); got != "http://127.0.0.1:7778" {
		t.Errorf("baseURL(127.0.0.1:7778) = %s", got)
	}
}

func TestRunAndHandlers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := Config{RedisURL: env.URL, Prefix: env.Prefix, PublicAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv, err := New(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Config().Prefix != env.Prefix || srv.Config().MaxBodyBytes != 1<<20 {
		t.Fatalf("Config() = %+v", srv.Config())
	}
	for _, h := range []http.Handler{srv.PublicHandler(), srv.AdminHandler()} {
		hs := httptest.NewServer(h)
		wantStatus(t, do(t, http.MethodGet, hs.URL+"/readyz", "", nil), http.StatusOK, "")
		hs.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	cfg.AdminAddr = busy.Addr().String()
	srv2, err := New(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if err := srv2.Run(ctxT(t)); err == nil || !strings.Contains(err.Error(), "admin listener") {
		t.Fatalf("Run on a busy admin port: %v", err)
	}
}
