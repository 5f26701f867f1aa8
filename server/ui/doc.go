// Package ui is Sluice's web dashboard, served by `sluice server` on the admin listener under
// /ui/: queues (depths, throughput of the last hour, pause, resume, purge), their jobs in tabs by
// state with actions on a selection (delete, run now, respawn, ack or cancel a lease, priority)
// behind a confirmation page, jobs by id or unique key (with a callback job's attempts), tokens
// (create, revoke), the request queue's endpoints and tasks, and the waiting rooms.
//
// Pages are rendered on the server from embedded html/template files, with a little vanilla
// JavaScript (no CDN, no build step) that refreshes the numbers from a JSON endpoint. Every page
// works without JavaScript; every state change is a POST form carrying a CSRF token.
//
// With an admin token configured, the dashboard asks for it once and then keeps an opaque,
// signed, expiring session cookie (HttpOnly, SameSite=Strict). The server's admin middleware
// (Host and Origin checks) applies to these routes like to every admin route; only the bearer
// check is replaced by the session.
//
// The throughput chart reads bounded per-minute samples of the queues' cumulative counters,
// taken by Sampler (one small hash per queue holding the last hour, with a TTL); long-term
// history is Prometheus's job.
package ui
