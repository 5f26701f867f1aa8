package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/internal/authguard"
)

// Outside a server's request (no state, so no guard) Authenticate is the check alone.
func TestAuthenticateWithoutGuard(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	wrong, broken := errors.New("wrong"), errors.New("store down")
	for _, c := range []struct {
		ok   bool
		err  error
		want error
	}{{true, nil, nil}, {false, nil, wrong}, {false, broken, broken}} {
		got := Authenticate(r, authguard.Token, wrong, func(context.Context) (bool, error) { return c.ok, c.err })
		if !errors.Is(got, c.want) || (c.want == nil && got != nil) {
			t.Errorf("check (%v, %v): %v, want %v", c.ok, c.err, got, c.want)
		}
	}
	if e := authBackoff(1500 * time.Millisecond); e.Status() != http.StatusTooManyRequests || e.Message != "too many failed authentications from this address: retry in 2s" {
		t.Errorf("backoff error %+v", e)
	}
}
