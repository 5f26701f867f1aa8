// Package jobs is the native job API: publish, get, delete, consume, ack, nack and touch jobs,
// list, pause, resume and delete queues, and work the dead letter, under /v1/ns/{ns}/...
// (docs/server.md, docs/openapi.yaml).
//
// It declares its routes (Routes) and the server mounts them behind its middleware, token
// authentication, per-token rate limits and error rendering; a handler finds its token with
// tenant.FromContext and returns errors from the registry in server/internal/httpapi. The hot requests
// (publish one job, consume, ack) are decoded and answered without reflection (fastjson.go,
// jsonwrite.go), byte for byte as encoding/json would.
package jobs
