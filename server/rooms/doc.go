// Package rooms is the waiting room's HTTP surface in `sluice server` (docs/waitroom.md,
// docs/openapi.yaml): on the admin listener, rooms are created, changed, listed with live
// figures, reset and deleted under /v1/rooms; on the public listener, visitors poll their status,
// nginx asks the check route, visitors release their slot and see the waiting page; and hosts
// named in the server's settings are served through a room as a reverse proxy to its upstream.
//
// The room logic is package waitroom; this package only turns HTTP into calls of it. It declares
// its routes (AdminRoutes, PublicRoutes) and the server mounts them behind its middleware and
// error rendering; the proxied hosts are mounted by MountProxies, since they take whole hosts
// rather than routes.
package rooms
