package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// AckParams name a delivery to finish.
type AckParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
	// Result, when not nil, is kept with the job (state done) for Config.ResultRetention; without
	// one the job is removed at once.
	Result []byte
}

// Ack finishes a delivery. It returns ErrLeaseLost when the lease expired or a later delivery holds
// the job, and ErrNotFound when the job is gone; either way nothing changes. Concurrent Ack calls
// on one queue share one script call.
func (c *Client) Ack(ctx context.Context, p AckParams) error {
	if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return err
	}
	outcome, err := c.ackComb.do(ctx, p.Namespace+"\x00"+p.Queue, p)
	if err != nil {
		return fmt.Errorf("queue: ack: %w", err)
	}
	return outcome
}

// Finish ends a job whatever its state, as lmstfy's ack does (it names no delivery): a job under
// a running lease is acked as that delivery (it counts as done), any other job is deleted. It
// returns ErrNotFound when there is no such job. Concurrent Finish and Ack calls on one queue
// share one script call; a finish of a job under no running lease takes a second one (ackOneQueue).
func (c *Client) Finish(ctx context.Context, ns, q, id string) error {
	if err := validateLease(ns, q, id, 1); err != nil {
		return err
	}
	outcome, err := c.ackComb.do(ctx, ns+"\x00"+q, AckParams{Namespace: ns, Queue: q, ID: id, Delivery: finishDelivery})
	if err != nil {
		return fmt.Errorf("queue: finish: %w", err)
	}
	return outcome
}

// finishDelivery in an ack asks the ack scripts to finish the job whatever its delivery (Finish);
// Ack refuses it from callers.
const finishDelivery = 0

// runAck acks a batch of deliveries of one queue in one script call; each gets its own outcome.
func (c *Client) runAck(ctx context.Context, _ string, ps []AckParams) ([]error, error) {
	reply, err := c.ackOneQueue(ctx, c.keys.get(ps[0].Namespace, ps[0].Queue), ps)
	if err != nil {
		return nil, err
	}
	out := make([]error, len(ps))
	for i := range ps {
		out[i] = ackOutcome(reply[i])
	}
	return out, nil
}

// ackOneQueue acks deliveries of the queue of k in one script call and returns one code per ack
// (ackOutcome). Acks that keep no result take ack_noresult.lua, which passes five keys and two
// arguments per ack where ack.lua passes twelve and four; any other batch takes ack.lua. A finish
// (lmstfy's ack) of a job under no running lease deletes it wherever it waits, which needs the
// queue's other keys: ack_noresult.lua leaves such acks to ack.lua, a second call.
func (c *Client) ackOneQueue(ctx context.Context, k queueKeys, ps []AckParams) ([]any, error) {
	if !acksWithoutResult(ps) || !c.scripts.UsesFunctions(ctx) {
		return c.run(ctx, scriptAck, k, ackScriptArgs(ps)...).Slice()
	}
	reply, err := c.ackNoResult(ctx, k, ps)
	if err != nil {
		return nil, err
	}
	if len(reply) != len(ps) {
		return nil, fmt.Errorf("%d answers from %s for %d acks", len(reply), scriptAckNoResult, len(ps))
	}
	return c.ackLeftOnes(ctx, k, ps, reply)
}

// ackLeftOnes sends the acks ack_noresult.lua left (leftToAck in reply) to ack.lua and puts its
// answers in their places. When that call fails the whole batch fails, as when a reply is lost:
// the acks the first call made stay made, and acking them again answers ErrNotFound.
func (c *Client) ackLeftOnes(ctx context.Context, k queueKeys, ps []AckParams, reply []any) ([]any, error) {
	var left []int
	for i, code := range reply {
		if code == leftToAck {
			left = append(left, i)
		}
	}
	if len(left) == 0 {
		return reply, nil
	}
	rest := make([]AckParams, len(left))
	for j, i := range left {
		rest[j] = ps[i]
	}
	restReply, err := c.run(ctx, scriptAck, k, ackScriptArgs(rest)...).Slice()
	if err != nil {
		return nil, err
	}
	if len(restReply) != len(rest) {
		return nil, fmt.Errorf("%d answers from %s for %d acks", len(restReply), scriptAck, len(rest))
	}
	for j, i := range left {
		reply[i] = restReply[j]
	}
	return reply, nil
}

// leftToAck is ack_noresult.lua's answer for an ack it leaves to ack.lua.
const leftToAck = int64(2)

// acksWithoutResult reports whether no ack of ps keeps a result: what ack_noresult.lua handles.
func acksWithoutResult(ps []AckParams) bool {
	for _, p := range ps {
		if p.Result != nil {
			return false
		}
	}
	return true
}

// ackNoResult runs ack_noresult.lua for ps (acksWithoutResult).
func (c *Client) ackNoResult(ctx context.Context, k queueKeys, ps []AckParams) ([]any, error) {
	fn := c.scripts.Function(string(scriptAckNoResult))
	return c.processFunction(ctx, func() *redis.Cmd {
		argv := make([]any, 0, 2+len(k.ackHead)+2*len(ps))
		argv = append(argv, "fcall", fn)
		argv = append(argv, k.ackHead...)
		for _, p := range ps {
			argv = append(argv, p.ID, p.Delivery)
		}
		cmd := redis.NewCmd(ctx, argv...)
		cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
		return cmd
	}).Slice()
}

// ackScriptArgs are ack.lua's own arguments for ps: their count, then four per ack.
func ackScriptArgs(ps []AckParams) []any {
	args := make([]any, 0, 1+4*len(ps))
	args = append(args, len(ps))
	for _, p := range ps {
		hasResult := "0"
		if p.Result != nil {
			hasResult = "1"
		}
		args = append(args, p.ID, p.Delivery, hasResult, p.Result)
	}
	return args
}

// ackOutcome maps ack.lua's code: 1 acked, 0 no such job, -1 lease lost.
func ackOutcome(code any) error {
	switch num(code) {
	case 0:
		return ErrNotFound
	case -1:
		return ErrLeaseLost
	default:
		return nil
	}
}

// AckMany finishes many deliveries: one script call per queue, pipelined. The error slice has one
// entry per ack (nil, ErrLeaseLost or ErrNotFound); the second return is for failures of the call
// itself (validation, Redis).
func (c *Client) AckMany(ctx context.Context, ps []AckParams) ([]error, error) {
	type group struct {
		k   queueKeys
		idx []int
		ps  []AckParams
	}
	var groups []*group
	byQueue := map[string]*group{}
	for i, p := range ps {
		if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
			return nil, inField(fmt.Sprintf("acks[%d]", i), err)
		}
		key := p.Namespace + "\x00" + p.Queue
		g := byQueue[key]
		if g == nil {
			g = &group{k: c.keys.get(p.Namespace, p.Queue)}
			byQueue[key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		g.ps = append(g.ps, p)
	}
	errs := make([]error, len(ps))
	collect := func(g *group, reply []any) {
		for j, i := range g.idx {
			errs[i] = ackOutcome(reply[j])
		}
	}
	if len(groups) == 1 {
		g := groups[0]
		reply, err := c.ackOneQueue(ctx, g.k, g.ps)
		if err != nil {
			return nil, fmt.Errorf("queue: ack: %w", err)
		}
		collect(g, reply)
		return errs, nil
	}
	calls := make([]scriptCall, len(groups))
	for i, g := range groups {
		calls[i] = scriptCall{script: scriptAck, keys: g.k, args: ackScriptArgs(g.ps)}
	}
	cmds, err := c.runMany(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("queue: ack: %w", err)
	}
	for i, g := range groups {
		reply, err := cmds[i].Slice()
		if err != nil {
			return nil, fmt.Errorf("queue: ack: %w", err)
		}
		collect(g, reply)
	}
	return errs, nil
}

// NackParams name a failed delivery.
type NackParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
	// Error is kept as the job's LastError.
	Error string
	// RetryAfter, when not nil, is the delay before the next try; nil uses the job's Backoff.
	RetryAfter *time.Duration
	// NoRetry sends the job to the dead letter now, whatever tries it has left.
	NoRetry bool
}

// NackOutcome says what a nack did with the job.
type NackOutcome string

// What a nack can do.
const (
	NackRetried NackOutcome = "retried" // another try is scheduled
	NackDead    NackOutcome = "dead"    // no tries left (or NoRetry): in the dead letter
	NackExpired NackOutcome = "expired" // the ttl ends before the next try: gone
)

// Nack reports a failed delivery: the job is tried again after RetryAfter (or its backoff) while
// it has tries left, else it goes to the dead letter.
func (c *Client) Nack(ctx context.Context, p NackParams) (NackOutcome, error) {
	if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return "", err
	}
	retry := int64(-1)
	if p.RetryAfter != nil {
		if *p.RetryAfter < 0 {
			return "", invalid("retry_after", "must not be negative")
		}
		retry = ceilMillis(*p.RetryAfter)
	}
	noRetry := "0"
	if p.NoRetry {
		noRetry = "1"
	}
	k := c.keys.get(p.Namespace, p.Queue)
	out, err := c.run(ctx, scriptNack, k, p.ID, p.Delivery, p.Error, retry, noRetry).Text()
	if err != nil {
		return "", leaseError("nack", err)
	}
	return NackOutcome(out), nil
}

// TouchParams name a lease to extend.
type TouchParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
	// TTR is the new lease length from now. 0: the job's own TTR.
	TTR time.Duration
}

// Touch extends a lease to now + TTR and returns its new end.
func (c *Client) Touch(ctx context.Context, p TouchParams) (time.Time, error) {
	if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return time.Time{}, err
	}
	if p.TTR < 0 {
		return time.Time{}, invalid("ttr", "must not be negative")
	}
	if p.TTR > 0 && p.TTR < time.Millisecond {
		return time.Time{}, invalid("ttr", "must be at least 1ms")
	}
	k := c.keys.get(p.Namespace, p.Queue)
	until, err := c.run(ctx, scriptTouch, k, p.ID, p.Delivery, p.TTR.Milliseconds()).Int64()
	if err != nil {
		return time.Time{}, leaseError("touch", err)
	}
	return time.UnixMilli(until), nil
}

// ReleaseParams name a lease to give back.
type ReleaseParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
}

// Release gives a leased job back unprocessed: it goes to the head of the ready jobs of its
// priority and the try it used is returned, so another consumer gets it at once and no failure is
// counted. Workers call it for jobs they fetched but will not run (shutdown).
func (c *Client) Release(ctx context.Context, p ReleaseParams) error {
	if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return err
	}
	k := c.keys.get(p.Namespace, p.Queue)
	if err := c.run(ctx, scriptRelease, k, p.ID, p.Delivery).Err(); err != nil {
		return leaseError("release", err)
	}
	return nil
}

// leaseError maps the scripts' NOT_FOUND and LEASE_LOST error replies to the sentinel errors.
func leaseError(op string, err error) error {
	switch {
	case redis.HasErrorPrefix(err, "NOT_FOUND"):
		return ErrNotFound
	case redis.HasErrorPrefix(err, "LEASE_LOST"):
		return ErrLeaseLost
	default:
		return fmt.Errorf("queue: %s: %w", op, err)
	}
}

func validateLease(ns, q, id string, delivery int) error {
	if err := validateQueue(ns, q); err != nil {
		return err
	}
	if err := validateID(id); err != nil {
		return err
	}
	if delivery < 1 {
		return invalid("delivery", "must be at least 1 (the number a consume returned)")
	}
	return nil
}

func validateID(id string) error {
	if id == "" || len(id) > 255 {
		return invalid("job_id", "must be 1..255 bytes")
	}
	return nil
}
