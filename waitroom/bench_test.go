package waitroom_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/httpbench"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// benchRoom makes the room "r"; redisCalls counts the commands the Redis server has run so far.
func benchRoom(b *testing.B, cfg waitroom.Config, room waitroom.RoomConfig) (c *waitroom.Client, r *waitroom.Room, redisCalls func() int64) {
	b.Helper()
	env := redistest.New(b)
	redisCalls = func() int64 {
		info, err := env.Client.Info(context.Background(), "stats").Result()
		if err != nil {
			b.Fatal(err)
		}
		_, rest, _ := strings.Cut(info, "total_commands_processed:")
		n, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	cfg.Prefix = env.Prefix
	cfg.ArrivalsPerMinute = cmp.Or(cfg.ArrivalsPerMinute, -1) // every visitor comes from one address
	cfg.PassKeys = [][]byte{testKey()}
	c, err := waitroom.NewClient(env.Client, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.SetRoom(context.Background(), "r", room); err != nil {
		b.Fatal(err)
	}
	r, _ = c.Room("r")
	return c, r, redisCalls
}

// reportRedisCalls reports the Redis commands per request since calls0: an admitted request makes
// none (its visitor's slot is kept alive at most every TouchInterval).
func reportRedisCalls(b *testing.B, redisCalls func() int64, calls0 int64) {
	b.ReportMetric(float64(redisCalls()-calls0-1)/float64(b.N), "redis-calls/op")
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// BenchmarkAdmittedMiddleware: requests of admitted visitors (valid pass) through Middleware in
// front of a handler, over HTTP: the pass is checked without Redis.
func BenchmarkAdmittedMiddleware(b *testing.B) {
	_, room, redisCalls := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000})
	site := httptest.NewServer(waitroom.Middleware(room, okHandler))
	defer site.Close()
	visitors := httpbench.Visitors(b, site.URL, 500)
	calls0 := redisCalls()
	httpbench.Gets(b, site.URL, visitors, 200)
	reportRedisCalls(b, redisCalls, calls0)
}

// BenchmarkAdmittedProxy: the same through the reverse proxy (deployment a) to an upstream
// server in the same process: two HTTP hops per request.
func BenchmarkAdmittedProxy(b *testing.B) {
	up := httptest.NewServer(okHandler)
	defer up.Close()
	_, room, redisCalls := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000, Upstream: up.URL})
	site := httptest.NewServer(waitroom.Proxy(room))
	defer site.Close()
	visitors := httpbench.Visitors(b, site.URL, 500)
	calls0 := redisCalls()
	httpbench.Gets(b, site.URL, visitors, 200)
	reportRedisCalls(b, redisCalls, calls0)
}

// BenchmarkBareProxy is the ceiling BenchmarkAdmittedProxy is judged against: a plain
// httputil.ReverseProxy with the same transport settings in front of the same upstream, with no
// room at all. On one machine the client, the proxy and the upstream share its cores, so the
// room's proxy can be no faster than this; run both in one go to compare them side by side.
func BenchmarkBareProxy(b *testing.B) {
	up := httptest.NewServer(okHandler)
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		b.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.SetXForwarded()
	}}
	site := httptest.NewServer(rp)
	defer site.Close()
	httpbench.Gets(b, site.URL, make([]string, 500), 200)
}

// BenchmarkBareLeanProxy is the room proxy's own upstream client (the lean path) with no room in
// front: what BenchmarkAdmittedProxy would do with a free pass check.
func BenchmarkBareLeanProxy(b *testing.B) {
	up := httptest.NewServer(okHandler)
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		b.Fatal(err)
	}
	site := httptest.NewServer(waitroom.NewLeanProxy(u))
	defer site.Close()
	httpbench.Gets(b, site.URL, make([]string, 500), 200)
}

// BenchmarkStatusPoll: waiting visitors polling GET /v1/rooms/{room}/status over HTTP: one Redis
// call each (the arrival script, which holds the visitor to its poll limit too).
func BenchmarkStatusPoll(b *testing.B) {
	c, _, _ := benchRoom(b, waitroom.Config{PollsPerMinute: 1 << 24}, waitroom.RoomConfig{MaxActive: 1})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	url := srv.URL + "/v1/rooms/r/status"
	httpbench.Gets(b, url, httpbench.Visitors(b, url, 1000)[1:], 200)
}

// BenchmarkArrive: new visitors arriving (Room.Arrive, one script call each), half admitted at
// first and then all joining the line.
func BenchmarkArrive(b *testing.B) {
	_, room, _ := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000})
	var seq atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := room.Arrive(context.Background(), fmt.Sprint("v", seq.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "arrivals/s")
}

// BenchmarkAdmittedMiddlewareInProcess: what the middleware itself costs an admitted request
// (pass check, keep-alive bookkeeping), without HTTP around it.
func BenchmarkAdmittedMiddlewareInProcess(b *testing.B) {
	_, room, _ := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000})
	site := httptest.NewServer(waitroom.Middleware(room, okHandler))
	cookies := httpbench.Visitors(b, site.URL, 500)
	site.Close()
	h := waitroom.Middleware(room, okHandler)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Cookie", cookies[int(next.Add(1))%len(cookies)])
		for pb.Next() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Errorf("status %d", w.Code)
				return
			}
		}
	})
}
