package server

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// largeResponses bounds the large answers one client address receives at once on this server
// instance (Config.LargeResponseBytes, MaxLargeResponsesPerClient). An answer is large when its
// Content-Length (every JSON answer declares one before its header is written) is at least
// bytes; a client already receiving max of them gets 429 too_many_large_responses instead, with
// Retry-After. So a thousand concurrent GETs of a 1 MiB job from one address hold at most max
// answers' buffers and handlers, not a thousand, and the write timeout cuts those that are not
// read.
type largeResponses struct {
	bytes int64
	max   int

	mu       sync.Mutex
	inFlight map[netip.Addr]int // client address -> large answers being written
}

func newLargeResponses(bytes int64, max int) *largeResponses {
	return &largeResponses{bytes: bytes, max: max, inFlight: make(map[netip.Addr]int)}
}

// acquire takes one of client's slots, if it has one left.
func (g *largeResponses) acquire(client netip.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[client] >= g.max {
		return false
	}
	g.inFlight[client]++
	return true
}

// release gives back one of client's slots.
func (g *largeResponses) release(client netip.Addr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[client] <= 1 {
		delete(g.inFlight, client)
		return
	}
	g.inFlight[client]--
}

// admit is called as w's answer starts with status code: a successful answer of at least
// g.bytes takes a slot of w's client (held until the request ends: statusWriter.releaseLarge).
// When the client has none left, the answer to a GET or HEAD is replaced by a 429
// too_many_large_responses and the body the handler then writes is dropped; the answer to any
// other method goes ahead without a slot, since its call changed state already (a consume's
// leases) and refusing it now would lose what it did. It reports whether the answer goes ahead.
func (g *largeResponses) admit(w *statusWriter, code int) bool {
	if code < 200 || code >= 300 {
		return true
	}
	n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64)
	if err != nil || n < g.bytes {
		return true
	}
	if g.acquire(w.client) {
		w.largeHeld = g
		return true
	}
	if w.req == nil || (w.req.Method != http.MethodGet && w.req.Method != http.MethodHead) {
		return true
	}
	w.large = nil // the refusal is small, and must not come back here
	h := w.Header()
	h.Del("Content-Length")
	h.Del("Content-Type")
	httpapi.WriteError(w, w.req, &httpapi.Error{
		Code:       httpapi.CodeTooManyLargeResponses,
		Message:    fmt.Sprintf("this client address is receiving %d large answers (%d bytes or more) already; retry when one is done", g.max, g.bytes),
		RetryAfter: time.Second,
	})
	w.dropBody = true
	return false
}

// releaseLarge gives back the slot w's answer held, if any.
func (w *statusWriter) releaseLarge() {
	if w.largeHeld != nil {
		w.largeHeld.release(w.client)
		w.largeHeld = nil
	}
}
