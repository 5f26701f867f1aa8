package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// Deleting a namespace is a background job kept in Redis (tenant.DeletionStore): its tokens are
// revoked 500 at a time, then its queues deleted deleteQueueBatch at a time, then its settings and
// its name. The DELETE request marks the namespace (from then on its tokens authenticate nothing
// and nothing of its name is created) and works on it for up to a second (Server.deleteInline); a namespace done by
// then answers 200 with the counts, a larger one 202 with the progress, and the deleter service of
// every instance carries it on, so it survives the process that started it.
const (
	deleteQueueBatch = 50                      // queues deleted per step
	deleteInline     = time.Second             // the DELETE request's own share of the work
	deleteLease      = 3 * time.Second         // one instance's turn on a namespace
	deleteTurn       = 2500 * time.Millisecond // work per turn, inside the lease
	deleteInterval   = 500 * time.Millisecond  // how often the deleter looks for deletions
)

// deleteNamespace is DELETE /v1/namespaces/{ns}.
func (s *Server) deleteNamespace(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	ctx := r.Context()
	if _, found, err := s.deletions.Get(ctx, ns); err != nil {
		return err
	} else if !found {
		if _, err := s.namespaces.Get(ctx, ns); err != nil {
			return err
		}
	}
	if _, err := s.deletions.Start(ctx, ns); err != nil {
		return err
	}
	d, done, err := s.deleteTurn(ctx, ns, s.deleteInline)
	if err != nil {
		return err
	}
	if done {
		httpapi.WriteJSON(w, http.StatusOK, map[string]int64{
			"revoked_tokens": d.RevokedTokens, "deleted_queues": d.DeletedQueues, "deleted_jobs": d.DeletedJobs,
		})
		return nil
	}
	httpapi.WriteJSON(w, http.StatusAccepted, map[string]any{"namespace": ns, "deleting": d})
	return nil
}

// deleteTurn takes the lease on namespace ns's deletion and works on it for up to budget. It
// returns the progress, and done when the namespace is gone (or another instance holds the lease:
// then done is false and the progress is as read).
func (s *Server) deleteTurn(ctx context.Context, ns string, budget time.Duration) (tenant.Deletion, bool, error) {
	ok, err := s.deletions.Lease(ctx, ns, deleteLease)
	if err != nil {
		return tenant.Deletion{}, false, err
	}
	if !ok {
		d, _, err := s.deletions.Get(ctx, ns)
		return d, false, err
	}
	end := time.Now().Add(budget)
	for time.Now().Before(end) {
		more, err := s.deleteStep(ctx, ns)
		if err != nil {
			return tenant.Deletion{}, false, err
		}
		if !more {
			return s.finishDeletion(ctx, ns)
		}
	}
	d, _, err := s.deletions.Get(ctx, ns)
	return d, false, err
}

// deleteStep does one bounded batch of namespace ns's deletion: a batch of tokens while it has
// any, then a batch of queues. It reports whether there may be more to do.
func (s *Server) deleteStep(ctx context.Context, ns string) (bool, error) {
	n, err := s.tokens.RevokeBatch(ctx, ns)
	if err != nil {
		return false, err
	}
	if n > 0 {
		return true, s.deletions.Add(ctx, ns, int64(n), 0, 0)
	}
	page, err := s.queue.QueuesPage(ctx, queue.QueuesPageParams{Namespace: ns, After: s.deleteScans.at(ns), Limit: s.deleteScans.batch})
	if err != nil {
		return false, err
	}
	more := len(page.Queues) > 0 || page.Next != ""
	if !more {
		// The scan has ended: every queue registered throughout it was in one of its pages. One
		// left (the scan started elsewhere and another instance took turns) starts it again.
		n, err := s.queue.QueueCount(ctx, ns)
		if err != nil {
			return false, err
		}
		more = n > 0
	}
	s.deleteScans.move(ns, page.Next)
	var queues, jobs int64
	for _, q := range page.Queues {
		j, err := s.queue.DeleteQueue(ctx, ns, q)
		if err != nil {
			_ = s.deletions.Add(ctx, ns, 0, queues, jobs)
			return false, err
		}
		queues++
		jobs += j
	}
	if err := s.deletions.Add(ctx, ns, 0, queues, jobs); err != nil {
		return false, err
	}
	return more, nil
}

// deleteScans keeps, per namespace being deleted, the position of this instance's scan of its
// queue registry, so each step goes on where the last one stopped. Starting every step at the
// registry's beginning walked past ever more emptied hash buckets: with 100,000 queues a step
// found none after about 6,000 were deleted, and the deletion never ended.
type deleteScans struct {
	mu    sync.Mutex
	after map[string]string // namespace -> the cursor of its next page ("": the start)
	batch int               // queues deleted per step (deleteQueueBatch; tests lower it)
}

// at is where the next page of namespace ns's registry starts.
func (d *deleteScans) at(ns string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.after[ns]
}

// move records next (a page's cursor; "": the scan ended) as where namespace ns's scan goes on.
func (d *deleteScans) move(ns, next string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if next == "" {
		delete(d.after, ns)
		return
	}
	if d.after == nil {
		d.after = map[string]string{}
	}
	d.after[ns] = next
}

// finishDeletion removes what is left of namespace ns once its tokens and queues are gone (its
// limits, quotas, callback settings, registry entries and name), ends the deletion and returns
// its final counts.
func (s *Server) finishDeletion(ctx context.Context, ns string) (tenant.Deletion, bool, error) {
	d, _, err := s.deletions.Get(ctx, ns)
	if err != nil {
		return d, false, err
	}
	steps := []func(context.Context, string) error{
		s.limits.RemoveNamespace, s.quotas.Remove, s.deliverer.Store().Delete,
		func(ctx context.Context, ns string) error { _, _, err := s.queue.DeleteNamespace(ctx, ns); return err },
		func(ctx context.Context, ns string) error {
			if err := s.namespaces.Delete(ctx, ns); err != nil && !errors.Is(err, tenant.ErrNotFound) {
				return err
			}
			return nil
		},
		s.deletions.Finish,
	}
	for _, step := range steps {
		if err := step(ctx, ns); err != nil {
			return d, false, err
		}
	}
	return d, true, nil
}

// nsDeleter carries on the namespace deletions in progress, each in turns under a lease, so a
// deletion started on an instance that died is finished by another.
type nsDeleter struct {
	startstop.Base
	s   *Server
	log *slog.Logger
}

var _ startstop.Service = (*nsDeleter)(nil)

// Start runs the deleter until Stop or ctx ends.
func (d *nsDeleter) Start(ctx context.Context) error {
	return d.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, deleteInterval, func(ctx context.Context) {
			pending, err := d.s.deletions.Pending(ctx)
			if err != nil {
				d.log.Warn("namespace deletions: listing failed", "error", err)
				return
			}
			for _, ns := range pending {
				if _, _, err := d.s.deleteTurn(ctx, ns, deleteTurn); err != nil && ctx.Err() == nil {
					d.log.Warn("namespace deletion step failed; retried", "namespace", ns, "error", err)
				}
			}
		})
	})
}
