package tenant

import "context"

// Identity holds the token a request authenticated with. The server keeps one in each request's
// state (so it costs no allocation of its own) and fills it once the route's authentication
// passes; handlers read it with FromContext.
type Identity struct {
	tok Token
	ok  bool
}

// Set records the authenticated token.
func (id *Identity) Set(tok Token) { id.tok, id.ok = tok, true }

// Identity returns id itself, so that an Identity is its own IdentityHolder.
func (id *Identity) Identity() *Identity { return id }

// IdentityHolder is a per-request value that carries an Identity (the server's request state).
type IdentityHolder interface {
	Identity() *Identity
}

type holderKey struct{}

// WithHolder returns ctx carrying h, through which FromContext finds the request's token.
func WithHolder(ctx context.Context, h IdentityHolder) context.Context {
	return context.WithValue(ctx, holderKey{}, h)
}

// HolderOf returns the IdentityHolder of ctx (nil when it has none).
func HolderOf(ctx context.Context) IdentityHolder {
	h, _ := ctx.Value(holderKey{}).(IdentityHolder)
	return h
}

// WithToken returns ctx carrying tok, for a context without a holder (outside the server's
// middleware); FromContext returns it.
func WithToken(ctx context.Context, tok Token) context.Context {
	id := &Identity{}
	id.Set(tok)
	return WithHolder(ctx, id)
}

// FromContext returns the token of an authenticated request; ok is false outside one.
func FromContext(ctx context.Context) (tok Token, ok bool) {
	h := HolderOf(ctx)
	if h == nil {
		return Token{}, false
	}
	id := h.Identity()
	return id.tok, id.ok
}
