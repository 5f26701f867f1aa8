// Package queue is Sluice's job queue engine on Redis: delayed and prioritised jobs with leases,
// retries with backoff, ack/nack, dead letter and dedup.
//
// Every state change is one Lua script on the keys of one queue (which share a hash tag, so it
// runs on Redis Cluster), with every time that decides something (due, lease end, expiry) taken
// from Redis TIME in milliseconds; the publish time of a lone job due now, which decides nothing,
// comes from the client's reading of Redis's clock, within a bound (docs/job-states.md). A process
// killed at any instant loses no job: a leased job whose consumer dies comes back when its lease
// (TTR) ends.
//
// The life of a job (docs/job-states.md):
//
//	publish ─► delayed ──(due)──► ready ──consume──► leased ──ack──► done / gone
//	              ▲                  ▲                 │
//	              └──── nack / lease expiry with tries left (after backoff)
//	                                                   └── no tries left ──► dead ──respawn──► ready
//
// Delivery is at least once. A lease is named by its delivery number: Ack, Nack, Touch and Release
// of a delivery whose lease has ended return ErrLeaseLost and change nothing, so a slow consumer
// can never ack the delivery another consumer now holds.
//
// Consume blocks without polling: scripts PUBLISH when jobs become ready, and a blocked consumer
// sleeps until the next due job or lease end that Redis reported. A Maintainer does the same
// housekeeping for queues that no consumer is reading, visiting only those with something due: the
// scripts that make time-driven work record each queue's next due time in a due index.
//
// A job with a Callback is never handed to consumers: when due it goes to its queue's callback
// lane, which only the callback deliverer (callback.Deliverer) leases from, with ConsumeCallbacks.
//
// Where things are: every Redis read and write but the Pub/Sub wake-ups (notify.go) is in the
// storage room, internal/store: the keys (keys.go builds every one), the job record's codecs, the scripts (lua/*.lua, lib.lua holding
// the helpers they share) and the one code that runs them (function library or EVALSHA, loading,
// reloading, pipelines, WAIT for replicas), with the faster scripts it picks for common cases. This
// package calls the store's typed methods and never picks a script, codec or key itself.
// The typed worker SDK is typed_*.go and worker*.go. Helpers for the tests of code that uses
// queues are in package queuetest.
package queue
