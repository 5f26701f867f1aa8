package tenant

import "context"

type tokenKey struct{}

// WithToken returns ctx carrying the token a request authenticated with. The server puts it
// there once a route's authentication passed; handlers read it with FromContext.
func WithToken(ctx context.Context, tok Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, tok)
}

// FromContext returns the token of an authenticated request; ok is false outside one.
func FromContext(ctx context.Context) (tok Token, ok bool) {
	tok, ok = ctx.Value(tokenKey{}).(Token)
	return tok, ok
}
