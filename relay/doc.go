// Package relay is Sluice's request queue: fair, prioritised, rate- and concurrency-limited
// execution of HTTP calls to slow endpoints (image generation, reports, LLM calls), with status,
// position, ETA and cancel, on plain Redis (standalone, Sentinel or Cluster).
//
// # Endpoints
//
// An Endpoint is a slow service with its limits: QPS (calls started per second), Concurrency
// (calls in flight), Timeout, QueueTimeout, MaxQueued, MaxQueuedPerSubject, Tries. Its settings
// live in Redis (Client.SetEndpoint, Endpoint, Endpoints, DeleteEndpoint) and every Client caches
// them. A change is pushed to every Client (Pub/Sub), which drops its cache and confirms, before
// SetEndpoint returns, so the next call anywhere sees it; a name the cache lacks is looked for in
// Redis before a submit answers ErrNotFound; and a version counter checked every
// Config.RefreshInterval (250ms) covers a Client the push missed. A task may only call its
// endpoint's TargetURL or a URL under it: there is no open relay.
//
// # Tasks
//
// Client.Submit queues a task for an endpoint (by name, or by a target URL under an endpoint's)
// and returns its id and WaitNum, the exact number of tasks ahead of it. Tasks start strictly by
// priority, then first come first served: one sorted set per endpoint whose score is
// priority-major, sequence-minor, so the position is a ZRANK (O(log n)) across priorities.
//
// Client.Get returns a task's status, result, HTTP status, position and ETA; Client.Wait
// long-polls until it is permitted or has ended, woken by a Pub/Sub notification from the script
// that changed it (no polling); Client.Cancel cancels it. Statuses:
//
//	pending ─► processing (offline) ─► completed | failed      (retries go back to pending)
//	        └► permitted (online)   ─► completed (Done, or a used permit's expiry) | failed
//	pending ─► cancelled | timeout (waited past QueueTimeout)
//	processing | permitted ─► cancelled
//
// SubmitParams.IdempotencyKey makes a resend safe (the same key from the same submitter answers
// with the first task); SubmitParams.Callback names a completion callback that receives the task's
// final state when it ends, handed on by maintenance to Config.Completions (package callback's
// TaskCallbacks: signed, retried callback jobs).
//
// # Dispatch
//
// A Dispatcher (any number, in any number of processes) starts tasks. Each dispatch is one Lua
// script that takes a QPS token (GCRA), concurrency slots (a sorted set of running tasks with
// lease deadlines) and the next tasks together, so the limits hold across every dispatcher and
// no limit is checked in one call and used in another. The rate limit holds as the endpoint sees
// it: calls are spaced with a small margin, and a call that starts later than the margin holds
// back the calls of the second after it, so they cannot bunch up behind it. Offline tasks are called through the
// outbound engine (no private addresses unless allowed, bounded reads); 2xx completes, 4xx other
// than 429 fails, connection errors, timeouts, 5xx and 429 are retried with backoff (Retry-After
// honoured) up to the endpoint's Tries, and an endpoint that keeps failing trips a circuit
// breaker that pauses its dispatch and sends one probe. A dispatcher killed mid-call loses
// nothing: its lease expires and maintenance retries or fails the task by its tries.
//
// # Online tasks and permits
//
// An online task becomes permitted when its turn comes, and Get returns a signed (HMAC-SHA256),
// short-lived, single-use permit. The caller calls the endpoint with it in the Sluice-Permit
// header; the endpoint checks it with RequirePermit (net/http middleware) or Client.CheckPermit
// (for an nginx auth_request handler), both naming the endpoint they guard: a permit admits a
// call to the endpoint it was issued for and no other, and, when the endpoint binds them
// (Endpoint.PermitMethods, PermitPathPrefix), only with its methods and under its path. The
// permit holds one concurrency slot until Client.Done or its expiry.
//
// # Priority that clients cannot forge
//
// SubmitParams.Priority is lowered to SubmitParams.PriorityCap (set by the caller from the
// submitter's credentials) unless a valid grant (SignGrant, signed by the application's backend
// for a subject) allows more.
//
// # Lifecycle
//
// A pending task is kept for Config.PendingRetention (3h), a finished one for
// Config.FinishedRetention (1h), and Config.ReadRetention (20s) after its final status was read.
// Every key of an endpoint shares one hash tag, so every script runs on Redis Cluster, and every
// key has a TTL or an owner that trims it.
//
// # Archive
//
// Config.Archive (an Archive) keeps finished tasks after Redis has let them go, written by
// maintenance and read by Get; package relay/mysqlarchive is the MySQL/MariaDB one, apart from
// this package so that a program without an archive links no SQL driver.
//
// # Callbacks
//
// Job callbacks (package callback) count against an endpoint's limits when their URL is under its
// target URL: the callback deliverer finds the endpoint with CoveringEndpoint and takes one of its
// slots (AcquireSlot, HoldSlot) for each call, so tasks and callbacks to one service share one
// budget. docs/callbacks.md is the guide.
package relay
