package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fakeProxy stands for a room's proxy in the mux.
type fakeProxy struct{ http.HandlerFunc }

func (fakeProxy) ServeLean(http.ResponseWriter, *http.Request) bool { return false }

// The lean path's route cache answers as the mux does, for a room's proxy and for the routes
// around it, and holds at most routeCacheSize routes however many paths a client asks for.
func TestRouteCacheAnswersAsTheMux(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	proxy := fakeProxy{}
	mux.Handle("shop.example/", proxy)
	mux.HandleFunc("GET /v1/queues/{q}", func(http.ResponseWriter, *http.Request) {})
	var c routeCache
	for _, tc := range []struct {
		method, host, target string
		proxied              bool
		pattern              string
	}{
		{"GET", "shop.example", "/page", true, "shop.example/"},
		{"GET", "shop.example", "/page", true, "shop.example/"}, // from the cache
		{"POST", "shop.example", "/v1/queues/a", true, "shop.example/"},
		{"GET", "other.example", "/page", false, ""},
		{"GET", "other.example", "/v1/queues/a", false, ""},
		{"GET", "shop.example", "/a//b", false, ""}, // the mux's redirect to a clean path
		{"GET", "shop.example", "/a%2Fb", true, "shop.example/"},
	} {
		r := httptest.NewRequest(tc.method, "http://"+tc.host+tc.target, nil)
		h, muxPattern := mux.Handler(r)
		if _, isProxy := h.(roomProxy); isProxy != tc.proxied || isProxy && muxPattern != tc.pattern {
			t.Fatalf("%s %s%s: the case does not say what the mux does", tc.method, tc.host, tc.target)
		}
		got, pattern := c.route(mux, r)
		if (got != nil) != tc.proxied || pattern != tc.pattern {
			t.Errorf("%s %s%s: proxy %v, pattern %q; want %v, %q", tc.method, tc.host, tc.target, got != nil, pattern, tc.proxied, tc.pattern)
		}
	}
	for i := range 3 * routeCacheSize {
		c.route(mux, httptest.NewRequest(http.MethodGet, fmt.Sprintf("http://shop.example/p%d", i), nil))
	}
	n := 0
	c.routes.Range(func(any, any) bool { n++; return true })
	if n > routeCacheSize {
		t.Fatalf("the cache holds %d routes, more than %d", n, routeCacheSize)
	}
}
