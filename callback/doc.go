// Package callback delivers job callbacks: a job published with a callback
// (queue.PublishParams.Callback, queue.WithCallback) is never handed to consumers; when it is due
// it waits on its queue's callback lane, and a Deliverer (one runs in every `sluice server`; a Go
// service may run its own) leases it and sends its payload to the URL, signed with the Standard
// Webhooks headers (Sign; Verify checks them on the receiving side). A 2xx ends the job with the
// response as its result; a connection error, timeout, 5xx or 429 retries with the job's backoff;
// other 4xx and spent tries go to the dead letter.
//
// Store keeps each namespace's settings in Redis: its signing secrets (two live during a
// rotation), the URL prefixes its callbacks may call, and whether they may reach private
// addresses. Every Deliverer reads them (cached for DelivererConfig.SettingsTTL).
//
// Calls go through the outbound engine (private addresses refused at dial time unless allowed,
// bounded response reads) within per-destination limits, or, for a callback under the target URL
// of a request queue endpoint, within that endpoint's QPS and concurrency together with its tasks
// (DelivererConfig.Relay, an EndpointSlots that *relay.Client satisfies). The job model (the
// callback field, its validation, the callback lane) is package queue's; this package is the
// delivery side. TaskCallbacks carries the request queue's completion callbacks (a task's final
// state, sent when it ends) over the same machinery, as a relay.CompletionSink. docs/callbacks.md
// is the guide.
package callback
