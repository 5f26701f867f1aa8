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
//   - [github.com/sluicehq/sluice/relay]: the request queue (fair, prioritised, rate- and
//     concurrency-limited calls to slow endpoints, online permits, position, ETA, cancel, results
//     and their archive).
//   - [github.com/sluicehq/sluice/relay/mysqlarchive]: the MySQL/MariaDB archive of finished
//     tasks (a relay.Archive), in its own package so that only its importers link a SQL driver.
//   - [github.com/sluicehq/sluice/callback]: the delivery of job callbacks (delayed jobs sent to a
//     URL, signed with Standard Webhooks, within the limits of the request queue's endpoints),
//     each namespace's callback settings, and Verify for receivers.
//   - [github.com/sluicehq/sluice/waitroom]: a virtual waiting room: at most N active users, a fair
//     FIFO line with position and ETA, signed passes and a waiting page, as net/http middleware, a
//     reverse proxy or an nginx auth_request endpoint.
//
// The sluice binary (cmd/sluice) serves them over HTTP: the job queue natively and as a drop-in for
// lmstfy's API, the request queue, callbacks, waiting rooms and a dashboard. Its HTTP side is laid
// out by job:
//
//   - [github.com/sluicehq/sluice/server]: the composition root: listeners, middleware,
//     authentication, error rendering, metrics, the embedded Redis, and the mounting of each
//     system's routes;
//   - [github.com/sluicehq/sluice/server/jobs]: the native job routes (/v1/ns/{ns}/...);
//   - [github.com/sluicehq/sluice/server/lmstfy]: the lmstfy-compatible API (/api/...);
//   - [github.com/sluicehq/sluice/server/tasks]: the request queue's routes (/v1/tasks,
//     /v1/permits/check, /v1/endpoints);
//   - [github.com/sluicehq/sluice/server/callbacks]: the admin routes of callback settings;
//   - [github.com/sluicehq/sluice/server/rooms]: the waiting rooms' routes and reverse proxy;
//   - [github.com/sluicehq/sluice/server/ui]: the dashboard on the admin listener (/ui/);
//   - [github.com/sluicehq/sluice/server/tenant]: namespaces, tokens and per-token limits, shared
//     by every system's routes;
//   - server/internal/httpapi: the error registry, JSON helpers and the Route description that
//     route packages declare and the server mounts;
//   - internal/adminguard: the admin listener's checks against web pages (Host, Origin, body
//     type);
//   - internal/outbound: the one HTTP engine of every call Sluice sends (request queue, callbacks).
//
// docs/layout.md is the map of every package, floor by floor, with what each may import (a test
// holds the code to it); docs/server.md says how a new system adds its routes.
//
// Every state change in Redis is one atomic Lua script or one command, with time taken from Redis
// itself, so any number of processes can share one Redis safely.
//
// This package itself holds what every package shares and imports nothing of the project:
// [FieldError], the one shape of a refused input field, which every package returns and the server
// answers as 400 invalid_argument naming the field.
package sluice
