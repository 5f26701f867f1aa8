package waitroom_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/waitroom"
)

// proxySite is a room's proxy served by a ProxyServer (the lean loop, net/http behind it) on
// loopback.
type proxySite struct {
	URL    string
	Server *waitroom.ProxyServer
}

// serveProxy serves room's proxy with a ProxyServer configured by hs (nil: no timeouts) until
// the test ends; the server is shut down gracefully then.
func serveProxy(tb testing.TB, room *waitroom.Room, hs *http.Server) *proxySite {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := waitroom.NewProxyServer(room, hs)
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	})
	return &proxySite{URL: "http://" + ln.Addr().String(), Server: srv}
}
