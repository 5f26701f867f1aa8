// Package waitroom is a virtual waiting room: at most MaxActive visitors use a site at once, the
// others wait in a fair FIFO line, see their position, the line's length and an ETA, and get in
// as soon as a slot frees.
//
// Rooms live in Redis (standalone, Sentinel or Cluster), so any number of instances serve one
// room. Deciding and taking a slot is one Lua script, so the room never holds more than MaxActive
// visitors, whatever the number of instances and arrivals. A visitor is a random id in a signed
// cookie (not an IP), so a refresh or a second tab keeps its place. An admitted visitor gets a
// signed pass (HMAC-SHA256, two keys for rotation), so its requests are checked without a Redis
// call; its slot is kept alive by a touch at most every few seconds and freed by idle timeout or
// an explicit release.
//
// Three ways to deploy it:
//
//   - Middleware(room, next): in front of any net/http handler of a Go service;
//   - Proxy(room): a reverse proxy to the room's Upstream (what `sluice server` runs);
//   - Client.Handler: the routes for nginx's auth_request (GET /v1/rooms/{room}/check), the
//     waiting page and the JSON status for apps.
//
// A Maintainer (any number of processes may run one) removes visitors who stopped polling and
// frees idle slots in bounded batches. Stats, Counters and Hooks feed metrics; the package imports
// no metrics library. See docs/waitroom.md for the deployments and the ETA method.
package waitroom
