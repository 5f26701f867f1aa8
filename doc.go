// Package sluice is Redis-native traffic control for backend services: the pieces that protect a
// slow or fragile service from overload and schedule work for later, on a plain Redis (standalone,
// Sentinel or Cluster).
//
// The packages, each usable on its own inside a Go service:
//
//   - [github.com/sluicehq/sluice/queue]: the job queue engine (delayed, prioritised, retried jobs
//     with leases, ack/nack, dead letter, dedup) and the typed Queue[T] worker SDK.
//   - [github.com/sluicehq/sluice/queuetest]: helpers for the tests of code that uses queues:
//     assert that a job was (or was not) enqueued, and drain a queue through a handler
//     synchronously, on a real Redis.
//   - [github.com/sluicehq/sluice/ratelimit]: GCRA, sliding log, sliding window, fixed window and
//     distributed concurrency limits, with net/http middleware.
//   - [github.com/sluicehq/sluice/cache]: a consistent cache-aside Store[K,V] in which no stale value
//     survives a delete.
//
// The sluice binary (cmd/sluice) serves the job queue over HTTP, natively and as a drop-in for
// lmstfy's API. Its HTTP side is laid out by job:
//
//   - [github.com/sluicehq/sluice/server]: the composition root: listeners, middleware,
//     authentication, error rendering, metrics, the embedded Redis, and the mounting of each
//     system's routes;
//   - [github.com/sluicehq/sluice/server/jobs]: the native job routes (/v1/ns/{ns}/...);
//   - [github.com/sluicehq/sluice/server/lmstfy]: the lmstfy-compatible API (/api/...);
//   - internal/tenant: namespaces, tokens and per-token limits, shared by every system's routes;
//   - internal/httpapi: the error registry, JSON helpers and the Route description that route
//     packages declare and the server mounts.
//
// docs/server.md says where each piece lives and how a new system adds its routes.
//
// Every state change in Redis is one atomic Lua script or one command, with time taken from Redis
// itself, so any number of processes can share one Redis safely.
package sluice
