package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// KeyFunc returns the key a request is limited under. An empty key means the request is not
// limited.
type KeyFunc func(r *http.Request) string

// KeyByIP keys requests by the client's IP address from r.RemoteAddr. Behind a proxy, use
// KeyByHeader with the header the proxy sets (X-Real-IP, say) instead: RemoteAddr is the proxy.
func KeyByIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// KeyByHeader keys requests by the value of a header (for example an API key header, or the
// client IP a trusted proxy sets). Requests without the header are not limited.
func KeyByHeader(name string) KeyFunc {
	return func(r *http.Request) string { return r.Header.Get(name) }
}

// KeyByToken keys requests by their bearer token (Authorization: Bearer <token>). The key is a
// hash of the token, so tokens never appear in Redis key names. Requests without one are not
// limited.
func KeyByToken(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if len(auth) < 7 || !strings.EqualFold(auth[:7], "bearer ") {
		return ""
	}
	token := strings.TrimSpace(auth[7:])
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return "token:" + hex.EncodeToString(sum[:12])
}

// KeyByRoute keys requests by their http.ServeMux pattern ("GET /items/{id}"), so each route has
// its own limit. The pattern is known only inside the mux: wrap the handlers you register, not
// the mux. Without a pattern it falls back to the method and path.
func KeyByRoute(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return r.Method + " " + r.URL.Path
}

// Keys joins several keys into one ("per token per route", say). If any of them is empty the
// request is not limited.
func Keys(fns ...KeyFunc) KeyFunc {
	return func(r *http.Request) string {
		parts := make([]string, len(fns))
		for i, f := range fns {
			if parts[i] = f(r); parts[i] == "" {
				return ""
			}
		}
		return strings.Join(parts, "|")
	}
}

// MiddlewareConfig configures Limiter.Middleware.
type MiddlewareConfig struct {
	// Key says what a request is limited under. Default KeyByIP.
	Key KeyFunc
	// Cost is what a request costs. Default 1 for every request. A cost the limit can never
	// allow is an error (see ErrorHandler).
	Cost func(r *http.Request) int
	// Shadow counts requests against the limit but never blocks them and sets no headers: for
	// trying a limit out on real traffic. OnDenied still sees the requests it would block.
	Shadow bool
	// OnDenied, when set, is called for every request over the limit (blocked or, in shadow mode,
	// let through), for logs and metrics.
	OnDenied func(r *http.Request, key string, res Result)
	// DeniedHandler writes the response to a blocked request, after the rate-limit headers are
	// set. Default: 429 Too Many Requests with a short plain-text body.
	DeniedHandler http.Handler
	// ErrorHandler writes the response when the limiter returns an error (an invalid cost or the
	// request's context ending; Redis failures are decided by the limiter's failure policy).
	// Default: 500 Internal Server Error.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)
}

// Middleware limits the requests that reach next. Allowed requests carry RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset (seconds) headers; blocked ones also get Retry-After
// (seconds) and, by default, a 429.
func (l *Limiter) Middleware(cfg MiddlewareConfig) func(http.Handler) http.Handler {
	if cfg.Key == nil {
		cfg.Key = KeyByIP
	}
	if cfg.DeniedHandler == nil {
		cfg.DeniedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
		})
	}
	if cfg.ErrorHandler == nil {
		cfg.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := cfg.Key(r)
			if key == "" {
				next.ServeHTTP(w, r)
				return
			}
			n := 1
			if cfg.Cost != nil {
				n = cfg.Cost(r)
			}
			res, err := l.AllowN(r.Context(), key, n)
			if err != nil {
				if cfg.Shadow {
					next.ServeHTTP(w, r)
					return
				}
				cfg.ErrorHandler(w, r, err)
				return
			}
			if !res.Allowed && cfg.OnDenied != nil {
				cfg.OnDenied(r, key, res)
			}
			if cfg.Shadow {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h.Set("RateLimit-Limit", strconv.Itoa(res.Limit))
			h.Set("RateLimit-Remaining", strconv.Itoa(res.Remaining))
			h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(res.ResetAfter), 10))
			if !res.Allowed {
				h.Set("Retry-After", strconv.FormatInt(max(ceilSeconds(res.RetryAfter), 1), 10))
				cfg.DeniedHandler.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// ceilSeconds rounds d up to whole seconds, as the HTTP headers want.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
