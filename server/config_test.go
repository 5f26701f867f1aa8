package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
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
		{Config{MaxConsumeBytes: 100}, "max_consume_bytes"},
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
		{Config{TrustedProxies: "10.0.0.0/33"}, "trusted_proxies"},
		{Config{TrustedProxies: "proxy.example"}, "trusted_proxies"},
		{Config{AuthFailureLimit: -1}, "auth_failure_limit"},
		{Config{AuthBackoffMax: time.Millisecond}, "auth_backoff_max"},
		{Config{UISessionTTL: time.Second}, "ui_session_ttl"},
		{Config{UISessionIdleTimeout: time.Second}, "ui_session_idle_timeout"},
	} {
		err := c.cfg.withDefaults().validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("validate(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	for _, ok := range []Config{
		{}, {AdminAddr: "localhost:7778"}, {AdminAddr: "[::1]:7778"}, {AdminAddr: ":7778", AdminToken: testAdminToken},
		{AdminToken: NewAdminToken()}, {TrustedProxies: "10.0.0.0/8, 127.0.0.1,::1"},
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

// A weak admin token is refused with an error naming the setting in its three spellings and
// carrying a strong token that passes.
func TestWeakAdminTokenRefused(t *testing.T) {
	t.Parallel()
	for token, why := range map[string]string{
		"x":                                  "1 characters, fewer than 24",
		"admin-secret":                       "12 characters",
		strings.Repeat("a", 40):              "only 1 different",
		"abcdefghijabcdefghijabcdefghij":     "piece of 10 characters repeated",
		"0123456789-0123456789-0123":         "piece of 11",
		"change-me-to-a-long-random-secret":  `"change-me"`,
		"MyAdminToken-CHANGEME-2024-xyz":     `"changeme"`,
		"a token with spaces in it, 2024 ok": "a space",
		"tökentökentökentökentökentökenxyz":  "outside ASCII",
	} {
		err := Config{AdminToken: token}.withDefaults().validate()
		if err == nil {
			t.Errorf("admin token %q accepted", token)
			continue
		}
		msg := err.Error()
		for _, want := range []string{"admin_token", "--admin-token", "SLUICE_ADMIN_TOKEN", why, "sluice token gen"} {
			if !strings.Contains(msg, want) {
				t.Errorf("admin token %q: %q lacks %q", token, msg, want)
			}
		}
		strong := regexp.MustCompile(`for instance (\S+)`).FindStringSubmatch(msg)
		if strong == nil || checkAdminToken(strong[1]) != nil || len(strong[1]) != 43 {
			t.Errorf("the error's suggestion %q is not a strong token", strong)
		}
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
