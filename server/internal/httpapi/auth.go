package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/server/internal/authguard"
	"github.com/sluicehq/sluice/server/tenant"
)

// Authenticate checks a credential of kind under the request's limit of failed authentications
// (RequestState.Guard, package authguard), the one way every route checks a secret: the dashboard's
// login, the admin token, namespace tokens. A client that must still wait after its failures gets
// 429 auth_backoff before check runs. check (given the request's context) reports whether the
// credential is right, or an error when it could not tell (the store is down). A right one forgets the client's failures and
// returns nil; a wrong one is recorded and returns wrong (the route's 401), or the 429 when the
// client must now wait, or 503 unavailable when the failure could not be recorded.
func Authenticate(r *http.Request, kind authguard.Kind, wrong error, check func(context.Context) (bool, error)) error {
	st := StateOf(r.Context())
	var guard *authguard.Guard
	if st != nil {
		guard = st.Guard
	}
	if guard != nil {
		if wait := guard.Wait(st.Client, kind); wait > 0 {
			return authBackoff(wait)
		}
	}
	ok, err := check(r.Context())
	switch {
	case err != nil:
		return err
	case guard == nil:
	case ok:
		if err := guard.Succeeded(r.Context(), st.Client); err != nil {
			// The record expires by itself; the request goes on.
			st.Log.WarnContext(r.Context(), "could not forget a client's failed authentications", "error", err, "request_id", st.ID)
		}
	default:
		wait, err := guard.Failed(r.Context(), st.Client, kind)
		if err != nil {
			return Unavailable(err)
		}
		if wait > 0 {
			return authBackoff(wait)
		}
	}
	if !ok {
		return wrong
	}
	return nil
}

func authBackoff(wait time.Duration) *Error {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	return &Error{Code: CodeAuthBackoff, RetryAfter: wait,
		Message: fmt.Sprintf("too many failed authentications from this address: retry in %ds", secs)}
}

// AuthenticateToken looks a namespace token's secret up under the request's limit of failed
// authentications (Authenticate): an unknown secret counts against the client and answers wrong
// (each API its own 401), or the 429 auth_backoff.
func AuthenticateToken(r *http.Request, tokens *tenant.TokenStore, secret string, wrong error) (tenant.Token, error) {
	var tok tenant.Token
	err := Authenticate(r, authguard.Token, wrong, func(ctx context.Context) (bool, error) {
		var err error
		tok, err = tokens.Authenticate(ctx, secret)
		if errors.Is(err, tenant.ErrUnauthenticated) {
			return false, nil
		}
		return err == nil, err
	})
	return tok, err
}
