// Package outbound is the one HTTP delivery engine for every call Sluice sends on someone's behalf:
// the request queue's offline tasks and the callbacks of delayed jobs.
//
// A call made for a client is a server-side request the client chose, so the engine carries the
// safety rules that keep Sluice from becoming an open relay into the network it runs in:
//
//   - UnderPrefix decides whether a URL is under a configured endpoint or an allowed prefix
//     (scheme, host, exact port, path segment boundary); callers check it before they queue a call.
//   - The Sender refuses loopback, private, link-local and other special addresses when it dials,
//     on the address actually connected to, so a name that resolves to a private address (DNS
//     rebinding) is refused as surely as a literal one. Config.AllowPrivate turns this off for
//     deployments whose endpoints live on a private network.
//   - Redirects are never followed: a 3xx is handed back as the response, so a public endpoint
//     cannot bounce a call to an address that was never checked.
//   - Response bodies are read up to Config.MaxResponseBytes and marked Truncated beyond it.
//
// Classify turns a response or error into Success, Retry (with the server's Retry-After) or Final,
// Backoff spaces retries, and a Breaker per destination stops a failing endpoint from burning every
// queued call's tries.
package outbound
