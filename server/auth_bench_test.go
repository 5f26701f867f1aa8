package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/internal/authguard"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// BenchmarkTokenAuth measures what the limit of failed authentications adds to a namespace
// token's check on the hot path (a token found in the instance's cache): without a guard, with a
// guard that saw no failure, and with one that remembers failures of 10,000 other clients (its
// most). Sub-benchmarks run side by side in one process: read them as ratios.
func BenchmarkTokenAuth(b *testing.B) {
	ctx, srv, secret := newHandlerBench(b, Config{TokenCacheTTL: time.Second})
	busy, err := authguard.New(authguard.Config{Redis: srv.rdb, Prefix: srv.cfg.Prefix, MaxFailuresPerSecond: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10_000 {
		if _, err := busy.Failed(ctx, netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), authguard.Token); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		guard *authguard.Guard
	}{{"no_guard", nil}, {"guard_idle", srv.guard}, {"guard_remembering", busy}} {
		b.Run(c.name, func(b *testing.B) {
			st := &httpapi.RequestState{Log: srv.log, Guard: c.guard, Client: netip.MustParseAddr("192.0.2.1")}
			r := httptest.NewRequestWithContext(httpapi.WithState(ctx, st), http.MethodGet, "/v1/ns/bench/queues", nil)
			r.Header.Set("Authorization", "Bearer "+secret)
			r.SetPathValue("ns", "bench")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := srv.authorize(r, false, tenant.PermPublish); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
