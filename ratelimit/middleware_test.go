package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMiddlewareHeaders(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		l := newLimiter(t, env, ratelimit.Config{Limit: ratelimit.PerMinute(2)})
		h := l.Middleware(ratelimit.MiddlewareConfig{})(ok)

		tests := []struct {
			remote     string
			status     int
			remaining  string
			retryAfter bool
		}{
			{"10.0.0.1:1234", http.StatusOK, "1", false},
			{"10.0.0.1:5678", http.StatusOK, "0", false},
			{"10.0.0.1:1234", http.StatusTooManyRequests, "0", true},
			{"10.0.0.2:1234", http.StatusOK, "1", false}, // another IP has its own limit
		}
		for i, tt := range tests {
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			r.RemoteAddr = tt.remote
			w := serve(h, r)
			if w.Code != tt.status {
				t.Fatalf("request %d: status %d, want %d", i, w.Code, tt.status)
			}
			hd := w.Header()
			if hd.Get("RateLimit-Limit") != "2" || hd.Get("RateLimit-Remaining") != tt.remaining {
				t.Fatalf("request %d: headers %v, want limit 2 remaining %s", i, hd, tt.remaining)
			}
			if reset, err := strconv.Atoi(hd.Get("RateLimit-Reset")); err != nil || reset < 1 || reset > 60 {
				t.Fatalf("request %d: RateLimit-Reset %q, want 1..60 seconds", i, hd.Get("RateLimit-Reset"))
			}
			retry := hd.Get("Retry-After")
			if tt.retryAfter {
				if s, err := strconv.Atoi(retry); err != nil || s < 1 || s > 30 {
					t.Fatalf("request %d: Retry-After %q, want 1..30 seconds", i, retry)
				}
			} else if retry != "" {
				t.Fatalf("request %d: Retry-After %q on an allowed request", i, retry)
			}
		}
	})
}

func TestMiddlewareShadow(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		l := newLimiter(t, env, ratelimit.Config{Limit: ratelimit.PerHour(1)})
		var denied atomic.Int64
		h := l.Middleware(ratelimit.MiddlewareConfig{
			Shadow: true,
			Key:    ratelimit.KeyByHeader("X-Api-Key"),
			OnDenied: func(_ *http.Request, key string, res ratelimit.Result) {
				if key == "a" && !res.Allowed {
					denied.Add(1)
				}
			},
		})(ok)
		for range 3 {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("X-Api-Key", "a")
			w := serve(h, r)
			if w.Code != http.StatusOK || w.Header().Get("RateLimit-Limit") != "" {
				t.Fatalf("shadow mode: status %d headers %v, want 200 and no headers", w.Code, w.Header())
			}
		}
		if denied.Load() != 2 || l.Stats().Denied != 2 || l.Stats().Allowed != 1 {
			t.Fatalf("shadow denials seen %d, stats %+v; want 2 denied, 1 allowed", denied.Load(), l.Stats())
		}
		// No key: not limited at all.
		if w := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)); w.Code != http.StatusOK || l.Stats().Allowed != 1 {
			t.Fatalf("request without a key: %d, stats %+v", w.Code, l.Stats())
		}
	})
}

func TestMiddlewareCostAndErrors(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		l := newLimiter(t, env, ratelimit.Config{Limit: ratelimit.Limit{Rate: 10, Period: time.Minute, Burst: 5}})
		h := l.Middleware(ratelimit.MiddlewareConfig{
			Key: ratelimit.KeyByRoute,
			Cost: func(r *http.Request) int {
				n, _ := strconv.Atoi(r.URL.Query().Get("n"))
				return n
			},
			DeniedHandler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }),
		})(ok)
		for _, tt := range []struct {
			n      string
			status int
		}{
			{"3", http.StatusOK},
			{"3", http.StatusServiceUnavailable},  // only 2 left; the custom denied handler answers
			{"6", http.StatusInternalServerError}, // more than the burst can ever allow
			{"2", http.StatusOK},
		} {
			w := serve(h, httptest.NewRequest(http.MethodPost, "/upload?n="+tt.n, nil))
			if w.Code != tt.status {
				t.Fatalf("cost %s: status %d, want %d", tt.n, w.Code, tt.status)
			}
		}
	})
}

func TestKeyFuncs(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/items/7", nil)
	r.RemoteAddr = "[2001:db8::1]:443"
	r.Header.Set("Authorization", "Bearer s3cret")
	r.Header.Set("X-Real-IP", "192.0.2.9")
	tok := ratelimit.KeyByToken(r)
	tests := []struct {
		name string
		fn   ratelimit.KeyFunc
		want string
	}{
		{"ip", ratelimit.KeyByIP, "2001:db8::1"},
		{"header", ratelimit.KeyByHeader("X-Real-IP"), "192.0.2.9"},
		{"missing header", ratelimit.KeyByHeader("X-Nope"), ""},
		{"route without a mux", ratelimit.KeyByRoute, "GET /items/7"},
		{"token", ratelimit.KeyByToken, tok},
		{"joined", ratelimit.Keys(ratelimit.KeyByIP, ratelimit.KeyByRoute), "2001:db8::1|GET /items/7"},
		{"joined with an empty part", ratelimit.Keys(ratelimit.KeyByIP, ratelimit.KeyByHeader("X-Nope")), ""},
	}
	for _, tt := range tests {
		if got := tt.fn(r); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if len(tok) < 10 || tok == "s3cret" || strings.Contains(tok, "s3cret") {
		t.Errorf("KeyByToken = %q, want a hash that does not show the token", tok)
	}
	r.Header.Set("Authorization", "Basic abc")
	if got := ratelimit.KeyByToken(r); got != "" {
		t.Errorf("KeyByToken without a bearer token = %q", got)
	}

	// Inside a ServeMux the route key is the pattern.
	var got string
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = ratelimit.KeyByRoute(r) }))
	serve(mux, httptest.NewRequest(http.MethodGet, "/items/9", nil))
	if got != "GET /items/{id}" {
		t.Errorf("KeyByRoute in a mux = %q", got)
	}
}
