package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
	"github.com/sluicehq/sluice/waitroom"
)

// TestErrorMapRendersEachSystemsErrors: the errors of every library whose routes the server
// mounts (and the kernel's own cases) come out with the status, Retry-After and body they have
// always had. The answers are part of the API: a row changes only with the API.
func TestErrorMapRendersEachSystemsErrors(t *testing.T) {
	t.Parallel()
	const unavailable = `{"error":{"code":"unavailable","message":"the store is unavailable; retry later"}}`
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		retryAfter string
		body       string
	}{
		// The kernel: field errors of every package, tenancy, body size, the store, the rest.
		{"queue field", fmt.Errorf("queue: invalid %w", sluice.Invalid("jobs[2].priority", "300 is outside 0..255")), 400, "",
			`{"error":{"code":"invalid_argument","message":"300 is outside 0..255","field":"jobs[2].priority"}}`},
		{"relay field", fmt.Errorf("relay: %w", sluice.Invalid("hold", "must be at least 1ms")), 400, "",
			`{"error":{"code":"invalid_argument","message":"must be at least 1ms","field":"hold"}}`},
		{"waitroom field", fmt.Errorf("waitroom: %w", sluice.Invalid("max_active", "must be between 1 and 1000000000, got 0")), 400, "",
			`{"error":{"code":"invalid_argument","message":"must be between 1 and 1000000000, got 0","field":"max_active"}}`},
		{"tenant field", sluice.Invalid("secret", "too short"), 400, "",
			`{"error":{"code":"invalid_argument","message":"too short","field":"secret"}}`},
		{"token exists", tenant.ErrTokenExists, 409, "",
			`{"error":{"code":"conflict","message":"a token with this secret exists already (in this or another namespace); nothing changed"}}`},
		{"unauthenticated", tenant.ErrUnauthenticated, 401, "",
			`{"error":{"code":"unauthenticated","message":"missing or unknown token"}}`},
		{"namespace not found", fmt.Errorf("get: %w", &tenant.NotFoundError{Message: "no namespace shop"}), 404, "",
			`{"error":{"code":"not_found","message":"no namespace shop"}}`},
		{"registry error", &httpapi.Error{Code: httpapi.CodeConflict, Message: "taken"}, 409, "",
			`{"error":{"code":"conflict","message":"taken"}}`},
		{"body too large", fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 1024}), 413, "",
			`{"error":{"code":"payload_too_large","message":"the request body is over the limit of 1024 bytes"}}`},
		{"redis closed", redis.ErrClosed, 503, "1", unavailable},
		{"connection lost", fmt.Errorf("publish: %w", io.ErrUnexpectedEOF), 503, "1", unavailable},
		{"anything else", errors.New("boom"), 500, "", `{"error":{"code":"internal","message":"internal error"}}`},

		// The job queue (server/jobs).
		{"job not found", fmt.Errorf("get: %w", queue.ErrNotFound), 404, "", `{"error":{"code":"not_found","message":"not found"}}`},
		{"lease lost", queue.ErrLeaseLost, 409, "",
			`{"error":{"code":"lease_lost","message":"the delivery no longer holds the lease (it expired or a later delivery took the job)"}}`},
		{"not replicated", queue.ErrNotReplicated, 503, "1",
			`{"error":{"code":"not_replicated","message":"the job is on the Redis primary but fewer replicas than replica_acks acknowledged it in time; publishing again adds a second job unless it has a unique_key"}}`},
		{"queue closed", queue.ErrClosed, 503, "1", unavailable},

		// The waiting room (server/rooms).
		{"room not found", waitroom.ErrRoomNotFound, 404, "", `{"error":{"code":"not_found","message":"no such room"}}`},
		{"room rate limited", &waitroom.HTTPError{Status: 429, Code: waitroom.CodeRateLimited, Message: "slow down", RetryAfter: 2500 * time.Millisecond}, 429, "3",
			`{"error":{"code":"rate_limited","message":"slow down"}}`},
		{"room upstream", &waitroom.HTTPError{Status: 502, Code: waitroom.CodeUpstreamUnavailable, Message: "the upstream could not be reached"}, 502, "",
			`{"error":{"code":"upstream_unavailable","message":"the upstream could not be reached"}}`},
		{"room code outside the registry", &waitroom.HTTPError{Status: 418, Code: "teapot", Message: "short and stout"}, 500, "",
			`{"error":{"code":"internal","message":"internal error"}}`},

		// The request queue (server/tasks).
		{"task not found", fmt.Errorf("%w: task %q", relay.ErrNotFound, "t1"), 404, "",
			`{"error":{"code":"not_found","message":"not found: task \"t1\""}}`},
		{"queue full", relay.ErrQueueFull, 409, "1",
			`{"error":{"code":"queue_full","message":"the endpoint's queue (or the subject's share of it) is full; retry later"}}`},
		{"permit invalid", relay.ErrPermitInvalid, 403, "", `{"error":{"code":"permit_refused","message":"invalid permit"}}`},
		{"permit expired", relay.ErrPermitExpired, 403, "", `{"error":{"code":"permit_refused","message":"permit expired"}}`},
		{"permit used", relay.ErrPermitUsed, 403, "", `{"error":{"code":"permit_refused","message":"permit already used"}}`},
		{"permit mismatch", fmt.Errorf("%w: the permit is for endpoint %q, not %q", relay.ErrPermitMismatch, "a", "b"), 403, "",
			`{"error":{"code":"permit_mismatch","message":"permit not for this call: the permit is for endpoint \"a\", not \"b\""}}`},
		{"not permitted", relay.ErrNotPermitted, 409, "", `{"error":{"code":"not_permitted","message":"task not permitted"}}`},
		{"relay closed", relay.ErrClosed, 503, "1", unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			httpapi.WriteError(rec, requestWithErrorMap(), tc.err)
			if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.retryAfter || rec.Body.String() != tc.body+"\n" {
				t.Errorf("%v: got %d (Retry-After %q) %s\nwant %d (Retry-After %q) %s",
					tc.err, rec.Code, rec.Header().Get("Retry-After"), rec.Body, tc.status, tc.retryAfter, tc.body)
			}
		})
	}
}

// requestWithErrorMap is a request as the server's middleware hands it to a route: its state
// carries the server's error map.
func requestWithErrorMap() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	st := &httpapi.RequestState{ID: "test", Log: slog.New(slog.DiscardHandler), Errors: errorMap()}
	return r.WithContext(httpapi.WithState(r.Context(), st))
}
