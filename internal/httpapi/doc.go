// Package httpapi is what every system's HTTP routes share, so that a system package declares
// routes and the server wraps them alike: the error registry (status + stable code + message,
// rendered as {"error":{"code","message"}}), JSON reading and writing, the Handler type that
// returns errors, the Route description (pattern, handler, permissions, rate-limit direction),
// the per-request state the server's middleware keeps (request id, the error code answered), and
// the rate-limit wrapper shared by every API that charges a token's limit.
//
// It imports no system's HTTP package and never the server, so route packages (server/jobs,
// server/lmstfy, and the systems added beside them) can import it without cycles.
package httpapi
