// Package tasks is the HTTP surface of the request queue (package relay): tasks and permits on
// the public listener (/v1/tasks, /v1/permits/check) and endpoints on the admin listener
// (/v1/endpoints), described in docs/relay.md ("HTTP API") and docs/openapi.yaml.
//
// It only turns HTTP into calls of a relay.Client: the server mounts its routes behind its token
// authentication, rate limits and error rendering. Task routes take a token of any namespace
// carrying the tasks permission; a task belongs to the namespace that submitted it, and a token
// of another namespace sees not_found. The token's priority cap (and a priority grant signed by
// the application's backend) bounds a task's priority: a higher number in the body is lowered.
package tasks
