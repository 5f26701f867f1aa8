package server

import (
	"context"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// readyz answers 200 while Redis answers within a second and takes writes; else 503 unavailable
// with the reason: Redis does not answer, is out of memory (maxmemory reached with noeviction:
// every write is refused) or is a read-only replica. A load balancer then stops sending work that
// could only fail. The probe is one SET of a few bytes with a short expiry, the smallest write
// Redis refuses in both states.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	err := s.rdb.Set(ctx, readyProbeKey(s.cfg.Prefix), "1", 10*time.Second).Err()
	if err != nil {
		return &httpapi.Error{Code: httpapi.CodeUnavailable, Message: notReadyReason(err), RetryAfter: time.Second, Cause: err}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// notReadyReason says in a sentence why a write probe failed.
func notReadyReason(err error) string {
	switch {
	case redis.HasErrorPrefix(err, "OOM"):
		return "redis refuses writes: out of memory (used memory is over maxmemory): " + err.Error()
	case redis.HasErrorPrefix(err, "READONLY"):
		return "redis refuses writes: the server is a read-only replica: " + err.Error()
	case redis.HasErrorPrefix(err, "MISCONF"):
		return "redis refuses writes: it cannot persist: " + err.Error()
	case redis.HasErrorPrefix(err, "NOREPLICAS"):
		return "redis refuses writes: not enough replicas: " + err.Error()
	default:
		return "redis does not take writes now: " + err.Error()
	}
}
