package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/sluicehq/sluice/server/internal/authguard"
	"github.com/sluicehq/sluice/server/tenant"
)

// RequestState is what the server's middleware knows about one request; handlers and error
// writers reach it through the context.
type RequestState struct {
	// ID is the request id (X-Request-Id).
	ID string
	// Log is the server's logger.
	Log *slog.Logger
	// OnUnavailable, when set, is called for each answer that says the store is unavailable
	// (the server counts them).
	OnUnavailable func()
	// Errors maps the errors of the systems the server mounts to the registry (ErrorOf,
	// WriteError). nil: the kernel's own cases only.
	Errors ErrorMap
	// Code is the registry code of the error the request answered with ("" for success).
	Code Code
	// Client is the client's address: the connection's, or the one a trusted proxy named.
	Client netip.Addr
	// HTTPS says the client's request came over TLS: to this server, or to a trusted proxy that
	// said so (X-Forwarded-Proto).
	HTTPS bool
	// Guard limits failed authentications per client (AuthWait, AuthFailed). nil: no limit.
	Guard *authguard.Guard

	identity tenant.Identity
	// charge is the request's charge to its token's rate limit (Limiter.Wrap), for RefundRequest.
	charge *charge
}

// Identity is the request's authenticated token, once a route's authentication set it
// (tenant.FromContext reads it).
func (st *RequestState) Identity() *tenant.Identity { return &st.identity }

// WithState returns ctx carrying st. The state is also the request's tenant.IdentityHolder, so
// the authenticated token travels in it at no cost of its own.
func WithState(ctx context.Context, st *RequestState) context.Context {
	return tenant.WithHolder(ctx, st)
}

// StateOf returns the request state of ctx (nil outside a request the server serves).
func StateOf(ctx context.Context) *RequestState {
	st, _ := tenant.HolderOf(ctx).(*RequestState)
	return st
}

// WithToken records the token a request authenticated with, for tenant.FromContext: in the
// request's state when the server's middleware made one (no copy of the request), else in a new
// context.
func WithToken(r *http.Request, tok tenant.Token) *http.Request {
	if st := StateOf(r.Context()); st != nil {
		st.identity.Set(tok)
		return r
	}
	return r.WithContext(tenant.WithToken(r.Context(), tok))
}

// RequestID returns the request id of a request's context ("" outside a request).
func RequestID(ctx context.Context) string {
	if st := StateOf(ctx); st != nil {
		return st.ID
	}
	return ""
}

// NoteError records the error a request answers with and logs the ones operators must see.
// Writers of other shapes (lmstfy's) call it too, so metrics and logs see every API alike.
func (st *RequestState) NoteError(ctx context.Context, e *Error, err error) {
	st.Code = e.Code
	switch e.Code {
	case CodeInternal:
		st.Log.ErrorContext(ctx, "request failed", "error", err, "request_id", st.ID)
	case CodeUnavailable:
		if st.OnUnavailable != nil {
			st.OnUnavailable()
		}
		st.Log.WarnContext(ctx, "store unavailable", "error", err, "request_id", st.ID)
	}
}
