package server

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
)

func TestRefusesEvictingRedis(t *testing.T) {
	t.Parallel()
	rs := redistest.StartServer(t, "maxmemory-policy allkeys-lru")
	_, err := New(ctxT(t), Config{RedisURL: rs.URL(), Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, ErrEvictingRedis) || !strings.Contains(err.Error(), "noeviction") {
		t.Fatalf("New on an evicting Redis: %v", err)
	}
}

func TestWarnsWithoutPersistence(t *testing.T) {
	t.Parallel()
	rs := redistest.StartServer(t, "appendonly no")
	logs := &testio.Buffer{}
	srv, err := New(ctxT(t), Config{RedisURL: rs.URL(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.Contains(logs.String(), "persistence is off") {
		t.Fatalf("no warning about persistence:\n%s", logs.String())
	}
}

func TestUnreachableRedisAtStart(t *testing.T) {
	t.Parallel()
	rs := redistest.StartServer(t)
	rs.Stop()
	_, err := New(ctxT(t), Config{RedisURL: rs.URL() + "?dial_timeout=1s&max_retries=-1", Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "cannot reach redis") {
		t.Fatalf("New on a stopped Redis: %v", err)
	}
}
