// Package lmstfy is the lmstfy-compatible API (docs/lmstfy.md): lmstfy's routes, parameters,
// defaults, status codes and JSON shapes on top of the queue engine, so lmstfy client libraries
// work unchanged. The server mounts it (MountPublic, MountAdmin) behind its middleware.
//
// Public listener: /api/{namespace}/{queue}[...] with the token in X-Token or ?token=.
// Admin listener: /token/..., /limits, /pools, /info, /version (its /metrics is the server's).
//
// Handlers return errors: an *Error for an answer in lmstfy's error shape ({"error": msg} with
// lmstfy's status), anything else for a failure, rendered by writeError in one place with the
// server's error registry (server/internal/httpapi) deciding its status. Tokens, permissions and limits
// are the server's tenancy (server/tenant): an lmstfy token is a namespace token.
package lmstfy
