package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/duework"
)

// MaintainResult counts what one maintenance pass did.
type MaintainResult struct {
	Endpoints int // endpoints visited: due ones, deleted ones still holding tasks, swept ones
	Reaped    int // expired leases (retried or failed) and expired permits
	TimedOut  int // tasks that waited past their queue deadline
	Cancelled int // waiting tasks of deleted endpoints
	Archived  int // finished tasks written to the archive
	// Completions counts the completion callbacks handed to Config.Completions.
	Completions int
	Failed      int // endpoints whose housekeeping failed (tried again after a backoff)
	Swept       int // endpoints of the registry visited to index them (sweepPage)
}

// forgetGrace is how long after its deletion an endpoint is still maintained, in refresh
// intervals: a Client whose cached settings are older than the deletion (up to a RefreshInterval,
// more when refreshes fail) may still submit to it, and such tasks must be cancelled by
// maintenance rather than left waiting forever.
const forgetGrace = 20

// maintainEndpoints is the most endpoints a pass takes from each shard of the due index, from the
// deleted endpoints and from the registry's sweep; what is left waits for the next pass.
const maintainEndpoints = 1000

// sweepEvery is how long a completed sweep of the registry lasts (registryKeys.swept): then the
// registry is swept again, a page a pass, which indexes what a version of Sluice that did not keep
// the due index stored meanwhile.
const sweepEvery = time.Hour

// maintenance is what a Client's maintenance passes carry from one to the next.
type maintenance struct {
	backoff duework.Backoff[string] // endpoints whose housekeeping failed in a row
	sweep   duework.Sweep           // of the registry (known)
}

// endpointLive reports whether the endpoint name exists: in snap, or else in Redis. A snapshot may
// lag a creation by Config.RefreshInterval (or longer when a refresh failed), and treating a new
// endpoint as deleted would cancel its first tasks.
func (c *Client) endpointLive(ctx context.Context, snap *endpointSnapshot, name string) (bool, error) {
	if _, ok := snap.byName[name]; ok {
		return true, nil
	}
	live, err := c.rdb.HExists(ctx, c.reg.settings, name).Result()
	if err != nil {
		return false, fmt.Errorf("relay: check endpoint %s: %w", name, err)
	}
	return live, nil
}

// MaintainOnce runs one bounded housekeeping step on each endpoint with something due, as the due
// index says (the scripts that make timed work record it there in the same call), and on each
// deleted endpoint until it holds no task; idle endpoints are not visited. Until the registry has
// been swept lately it also visits a page of it, which indexes endpoints stored by an older
// version. An endpoint whose housekeeping fails does not stop the others: it is tried again after
// a backoff (1 s doubling to 1 min), and the error names it. Every Dispatcher runs it; any number
// of processes may, as each step is one atomic script.
func (c *Client) MaintainOnce(ctx context.Context) (MaintainResult, error) {
	var res MaintainResult
	snap, err := c.endpoints(ctx)
	if err != nil {
		return res, err
	}
	now, due, err := duework.Due(ctx, c.rdb, dueBase(c.cfg.Prefix), c.keys.cluster, maintainEndpoints)
	if err != nil {
		return res, fmt.Errorf("relay: maintain: %w", err)
	}
	deleted, err := c.rdb.ZRangeByScore(ctx, c.reg.deleted,
		&redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now, 10), Count: maintainEndpoints}).Result()
	if err != nil {
		return res, fmt.Errorf("relay: list deleted endpoints: %w", err)
	}
	swept, err := c.sweepPage(ctx)
	if err != nil {
		return res, fmt.Errorf("relay: sweep the endpoints: %w", err)
	}
	res.Swept = len(swept)
	// One endpoint's failure (or the archive's) does not hold up the others: expired leases and
	// queue timeouts must be handled even while the archive database is down.
	var errs []error
	for _, name := range duework.Union(due, deleted, swept) {
		if err := c.maintainEndpoint(ctx, snap, now, name, &res); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.pruneArchive(ctx); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// maintainEndpoint runs one housekeeping step of the endpoint name, then hands on what it ended
// (completion callbacks, the archive), and forgets a deleted endpoint that holds nothing. When the
// step itself fails the endpoint's entries move to its next try (now, Redis's time in ms, plus its
// backoff); a failed hand-on leaves the endpoint due, so the next pass tries it again.
func (c *Client) maintainEndpoint(ctx context.Context, snap *endpointSnapshot, now int64, name string, res *MaintainResult) error {
	live, err := c.endpointLive(ctx, snap, name)
	if err != nil {
		return err
	}
	deleted := 0
	if !live {
		deleted = 1
		// A deletion older than the deleted set (an older version) is visited from now on.
		if err := c.rdb.ZAddNX(ctx, c.reg.deleted, redis.Z{Score: float64(now), Member: name}).Err(); err != nil {
			return fmt.Errorf("relay: maintain %s: %w", name, err)
		}
	}
	r, err := c.run(ctx, scriptMaintain, name, c.cfg.MaintainBatch, deleted).Int64Slice()
	if err != nil {
		res.Failed++
		at, err := c.maint.backoff.Fail(ctx, c.rdb, name, c.keys.get(name).due(), name, now, err)
		if derr := c.rdb.ZAddXX(ctx, c.reg.deleted, redis.Z{Score: float64(at), Member: name}).Err(); derr != nil {
			err = errors.Join(err, derr)
		}
		return fmt.Errorf("relay: maintain %s: %w", name, err)
	}
	c.maint.backoff.Succeeded(name)
	res.Endpoints++
	res.Reaped += int(r[0])
	res.TimedOut += int(r[1])
	res.Cancelled += int(r[2])
	var errs []error
	if r[4] > 0 {
		n, err := c.forwardCompletions(ctx, name)
		res.Completions += n
		errs = append(errs, err)
	}
	n, err := c.archiveFinished(ctx, name)
	res.Archived += n
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if !live && r[3] == 1 {
		grace := (forgetGrace * c.cfg.RefreshInterval).Milliseconds()
		keys := []string{c.reg.settings, c.reg.known, c.reg.deleted}
		if err := c.scripts.Run(ctx, scriptEndpointForget, keys, name, grace).Err(); err != nil {
			errs = append(errs, fmt.Errorf("relay: forget %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// sweepPage returns the next page of the registry of endpoints (known) for a pass to visit,
// unless a sweep completed within sweepEvery (duework.Sweep): visiting an endpoint indexes it, as
// its housekeeping sets its entry in the due index.
func (c *Client) sweepPage(ctx context.Context) ([]string, error) {
	return c.maint.sweep.Page(ctx, c.rdb, c.scripts, duework.Registry{
		Scan: func(ctx context.Context, cursor uint64) ([]string, uint64, error) {
			pairs, next, err := c.rdb.ZScan(ctx, c.reg.known, cursor, "", maintainEndpoints).Result()
			names := make([]string, 0, len(pairs)/2)
			for i := 0; i < len(pairs); i += 2 {
				names = append(names, pairs[i])
			}
			return names, next, err
		},
		Mark: c.reg.swept, Every: sweepEvery,
		Base: dueBase(c.cfg.Prefix), Cluster: c.keys.cluster,
		KeyOf: func(name string) string { return c.keys.get(name).due() },
	})
}
