// Package tenant is Sluice's tenancy: namespaces, the tokens that belong to them (stored hashed,
// with permissions and a priority cap), and per-token rate limits. Every system's routes
// authenticate through it, so a token means the same on the job routes, the lmstfy-compatible API
// and the systems added beside them. The authenticated token travels in the request context
// (WithToken, FromContext). All of its Redis keys are built in keys.go.
//
// The package knows nothing of HTTP error shapes: it returns *sluice.FieldError, NotFoundError and
// ErrUnauthenticated, which the server's error registry (server/internal/httpapi) maps to its codes.
package tenant
