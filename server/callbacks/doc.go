// Package callbacks serves the admin routes of callback settings: per namespace, the secrets that
// sign deliveries (two live during a rotation), the URL prefixes callbacks may call, and whether
// they may reach private addresses. The settings live in Redis (callback.Store), where every
// deliverer reads them; docs/callbacks.md describes the feature.
package callbacks
