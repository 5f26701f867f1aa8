// Package httpapi is what every system's HTTP routes share, so that a system package declares
// routes and the server wraps them alike: the error registry (status + stable code + message,
// rendered as {"error":{"code","message"}}) and the ErrorMap through which each system's route
// package maps its library's errors to it, JSON reading and writing, the Handler type that
// returns errors, the Route description (pattern, handler, permissions, rate-limit direction),
// the per-request state the server's middleware keeps (request id, the error map, the error code
// answered), and the rate-limit wrapper shared by every API that charges a token's limit.
//
// It is the kernel the systems are built on, so it imports none of them (queue, relay, callback,
// waitroom, nor their HTTP packages) and never the server: a system registers its errors (an
// ErrorMapper the server puts in its ErrorMap), as net/http handlers register with a mux. Route
// packages (server/jobs, server/lmstfy, and the systems added beside them) import it without
// cycles. What every package shares is below it: tenancy (server/tenant) and the field error
// (sluice.FieldError).
package httpapi
