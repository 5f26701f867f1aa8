package jobs

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// Config is what the job routes need from the server that mounts them.
type Config struct {
	// Queue is the job queue engine.
	Queue *queue.Client
	// MaxConsumeTimeout caps a consume's timeout.
	MaxConsumeTimeout time.Duration
	// Drain ends when a graceful shutdown starts: blocked consumes return at once. Required.
	Drain context.Context
	// CallbackDestinations returns the URL prefixes a namespace's callbacks may call, so that a
	// publish naming another URL is refused at once rather than dead-lettered when due. Nil: the
	// deliverer alone checks.
	CallbackDestinations func(ctx context.Context, ns string) ([]string, error)
	// WatchConsumer, when set, is told of each consume of namespace ns's queues as it starts,
	// and the function it returns when it answered (the dashboard's list of consumers).
	WatchConsumer func(ctx context.Context, ns string, queues []string) (done func())
}

// API serves the native job routes.
type API struct {
	cfg   Config
	queue *queue.Client
}

// New returns the job routes on cfg's queue.
func New(cfg Config) *API { return &API{cfg: cfg, queue: cfg.Queue} }

// Routes are the native job routes (/v1/ns/{ns}/...) for the server to mount on its public
// listener. docs/openapi.yaml describes them; the server's test keeps them in step.
func (a *API) Routes() []httpapi.Route {
	const q = "/v1/ns/{ns}/queues/{q}"
	anyPerm := []tenant.Permission{tenant.PermPublish, tenant.PermConsume, tenant.PermManage}
	publish := []tenant.Permission{tenant.PermPublish}
	consume := []tenant.Permission{tenant.PermConsume}
	manage := []tenant.Permission{tenant.PermManage}
	return append([]httpapi.Route{
		{Pattern: "POST " + q + "/jobs", Handler: a.publish, Perms: publish, Limit: tenant.LimitWrite},
		{Pattern: "GET " + q + "/jobs", Handler: a.listJobs, Perms: anyPerm},
		{Pattern: "GET " + q + "/jobs/{id}", Handler: a.getJob, Perms: anyPerm},
		{Pattern: "DELETE " + q + "/jobs/{id}", Handler: a.deleteJob, Perms: []tenant.Permission{tenant.PermPublish, tenant.PermManage}},
		{Pattern: "POST " + q + "/jobs/{id}/ack", Handler: a.ack, Perms: consume},
		{Pattern: "POST " + q + "/jobs/{id}/nack", Handler: a.nack, Perms: consume},
		{Pattern: "POST " + q + "/jobs/{id}/touch", Handler: a.touch, Perms: consume},
		{Pattern: "POST /v1/ns/{ns}/consume", Handler: a.consume, Perms: consume, Limit: tenant.LimitRead},
		{Pattern: "GET /v1/ns/{ns}/queues", Handler: a.listQueues, Perms: anyPerm},
		{Pattern: "GET " + q, Handler: a.getQueue, Perms: anyPerm},
		{Pattern: "DELETE " + q, Handler: a.deleteQueue, Perms: manage},
		{Pattern: "POST " + q + "/pause", Handler: a.pauseQueue, Perms: manage},
		{Pattern: "POST " + q + "/resume", Handler: a.resumeQueue, Perms: manage},
		{Pattern: "GET " + q + "/dead", Handler: a.listDead, Perms: anyPerm},
		{Pattern: "POST " + q + "/dead/respawn", Handler: a.respawnDead, Perms: manage},
		{Pattern: "DELETE " + q + "/dead", Handler: a.deleteDead, Perms: manage},
	}, a.scheduleRoutes()...)
}
