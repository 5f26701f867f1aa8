package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The outcomes the scripts report as errors; package queue answers them with its own sentinels.
var (
	// ErrNotFound: no such job (never was, or acked, deleted, expired or trimmed).
	ErrNotFound = errors.New("no such job")
	// ErrLeaseLost: the delivery named no longer holds the job's lease.
	ErrLeaseLost = errors.New("lease lost")
)

// scriptError maps the scripts' NOT_FOUND and LEASE_LOST error replies to ErrNotFound and
// ErrLeaseLost; other errors are returned as they are.
func scriptError(err error) error {
	switch {
	case redis.HasErrorPrefix(err, "NOT_FOUND"):
		return ErrNotFound
	case redis.HasErrorPrefix(err, "LEASE_LOST"):
		return ErrLeaseLost
	default:
		return err
	}
}

// Leased is what a consume script leased.
type Leased struct {
	Now, Next int64 // Redis time of the call; next due job or lease end (-1: none)
	More      bool  // the script stopped early: call again
	Full      bool  // the answer reached its byte bound: jobs may be left, for another call
	Count     int   // jobs leased, any left out of Jobs included
	// Jobs are the leased jobs, their records as the lease has them (state leased, the delivery,
	// one try less, the lease end).
	Jobs []Job
}

// Consume leases up to count ready jobs of one queue (at most 1000) for ttrMs (0: each job's own
// TTR), running the queue's housekeeping first. The answer carries at most Config.MaxConsumeBytes
// of records (ConsumeAcking).
func (s *Store) Consume(ctx context.Context, ns, q string, count int, ttrMs int64) (Leased, error) {
	leased, _, err := s.ConsumeAcking(ctx, ns, q, count, ttrMs, s.cfg.MaxConsumeBytes, nil)
	return leased, err
}

// ConsumeAcking is Consume with acks of the same queue done first in the same script call, as Ack
// does them. No ack may keep a result (its Result must be nil). It returns one outcome per ack;
// where the script left an ack to ack.lua (a finish of a job under no running lease) the outcome
// is unsettled until AckLeft runs: the caller calls it, so that the jobs leased reach their
// consumer whatever becomes of that second call.
// The answer carries at most maxBytes (0: Config.MaxConsumeBytes) of records and ids (Leased.Full
// when that stopped it); the
// first job is leased whatever its size, unless maxBytes is negative: then -maxBytes bounds every
// job (for a later queue of a consume whose earlier queues gave jobs already). Jobs that do not fit
// stay ready.
func (s *Store) ConsumeAcking(ctx context.Context, ns, q string, count int, ttrMs, maxBytes int64, acks []Ack) (Leased, []AckOutcome, error) {
	k := s.keys.get(ns, q)
	if maxBytes == 0 {
		maxBytes = s.cfg.MaxConsumeBytes
	}
	args := make([]any, 0, 3+2*len(acks))
	args = append(args, count, ttrMs, maxBytes)
	for _, a := range acks {
		args = append(args, a.ID, a.Delivery)
	}
	sent := s.clocks.micros()
	reply, err := s.run(ctx, scriptConsume, k, args...).Slice()
	if err != nil {
		return Leased{}, nil, err
	}
	if len(reply) < 4+len(acks) {
		return Leased{}, nil, fmt.Errorf("unexpected reply of %d fields for %d acks", len(reply), len(acks))
	}
	var outcomes []AckOutcome
	if len(acks) > 0 {
		outcomes = make([]AckOutcome, len(acks))
		for i, code := range reply[4 : 4+len(acks)] {
			outcomes[i] = AckOutcome(num(code))
		}
	}
	leased, err := s.parseLeasedReply(ctx, k, ns, q, reply, len(acks), sent)
	return leased, outcomes, err
}

// AckLeft settles the acks a script left to ack.lua (ConsumeAcking's outcomes), with one more
// call, and puts their outcomes in place.
func (s *Store) AckLeft(ctx context.Context, acks []Ack, outcomes []AckOutcome) error {
	if len(acks) == 0 {
		return nil
	}
	return s.ackLeftOnes(ctx, s.keys.get(acks[0].Namespace, acks[0].Queue), acks, outcomes)
}

// ConsumeCallbacks leases up to count jobs of the queue's callback lane, running its housekeeping
// first.
func (s *Store) ConsumeCallbacks(ctx context.Context, ns, q string, count int) (Leased, error) {
	k := s.keys.get(ns, q)
	sent := s.clocks.micros()
	reply, err := s.run(ctx, scriptConsumeCallbacks, k, count).Slice()
	if err != nil {
		return Leased{}, err
	}
	return s.parseLeasedReply(ctx, k, ns, q, reply, 0, sent)
}

// parseLeasedReply reads a consume script's answer. A job whose record this client cannot read
// (one written by a later version, with a field of a kind it cannot skip) is logged and left out
// rather than failing the call, whose other jobs are leased already: it stays leased, comes back
// when its lease ends, and reaches the dead letter when its tries run out. Redis's time in the
// answer of the call sent at sent (local µs) is the new reading of its server's clock (clock.go).
// The jobs' fields start after the four of the header and skip more (consume.lua's ack codes).
func (s *Store) parseLeasedReply(ctx context.Context, k queueKeys, ns, q string, reply []any, skip int, sent int64) (Leased, error) {
	if len(reply) < 4 {
		return Leased{}, fmt.Errorf("unexpected reply of %d fields", len(reply))
	}
	r := Leased{Now: num(reply[0]), Next: num(reply[1]), More: num(reply[2]) == 1, Full: num(reply[2]) == 2, Count: int(num(reply[3]))}
	s.clocks.learn(ctx, k.jobs(), r.Now, sent)
	first := 4 + skip
	if r.Count < 0 || len(reply) != first+r.Count*fieldsPerLeased {
		return Leased{}, fmt.Errorf("unexpected reply: %d fields for %d jobs", len(reply), r.Count)
	}
	r.Jobs = make([]Job, 0, r.Count)
	for j := range r.Count {
		f := reply[first+j*fieldsPerLeased : first+(j+1)*fieldsPerLeased]
		job, err := parseLeased(f)
		if err != nil {
			s.cfg.Logger.Error("queue: a leased job's record cannot be read; it stays leased until its lease ends",
				"namespace", ns, "queue", q, "id", str(f[0]), "err", err)
			continue
		}
		r.Jobs = append(r.Jobs, job)
	}
	return r, nil
}

// Ack names a delivery to finish. Its fields are queue.AckParams's, in order.
type Ack struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int // FinishAny: whatever the delivery (lmstfy's ack)
	Result    []byte
}

// FinishAny as an Ack's Delivery finishes the job whatever its delivery: a job under a running
// lease is acked as that delivery, any other job is deleted.
const FinishAny = 0

// AckOutcome is what one ack did.
type AckOutcome int64

// The outcomes of an ack (ack.lua's codes).
const (
	Acked        AckOutcome = 1
	AckNotFound  AckOutcome = 0
	AckLeaseLost AckOutcome = -1
	// leftToAck is ack_noresult.lua's answer for an ack it leaves to ack.lua.
	leftToAck AckOutcome = 2
)

// Ack finishes deliveries of one queue (acks[0]'s) in one script call and returns one outcome per
// ack. Acks that keep no result take ack_noresult.lua, which passes five keys and two arguments per
// ack where ack.lua passes twelve and four; any other batch takes ack.lua. A finish (FinishAny) of
// a job under no running lease deletes it wherever it waits, which needs the queue's other keys:
// ack_noresult.lua leaves such acks to ack.lua, a second call.
func (s *Store) Ack(ctx context.Context, acks []Ack) ([]AckOutcome, error) {
	k := s.keys.get(acks[0].Namespace, acks[0].Queue)
	if !acksWithoutResult(acks) || !s.scripts.UsesFunctions(ctx) {
		return s.ackWithScript(ctx, k, acks)
	}
	reply, err := s.ackNoResult(ctx, k, acks)
	if err != nil {
		return nil, err
	}
	if len(reply) != len(acks) {
		return nil, fmt.Errorf("%d answers from %s for %d acks", len(reply), scriptAckNoResult, len(acks))
	}
	out := make([]AckOutcome, len(reply))
	for i, code := range reply {
		out[i] = AckOutcome(num(code))
	}
	return out, s.ackLeftOnes(ctx, k, acks, out)
}

// ackWithScript runs ack.lua for acks.
func (s *Store) ackWithScript(ctx context.Context, k queueKeys, acks []Ack) ([]AckOutcome, error) {
	reply, err := s.run(ctx, scriptAck, k, ackScriptArgs(acks)...).Slice()
	if err != nil {
		return nil, err
	}
	return ackOutcomes(reply, len(acks))
}

// ackOutcomes reads ack.lua's answer to n acks.
func ackOutcomes(reply []any, n int) ([]AckOutcome, error) {
	if len(reply) != n {
		return nil, fmt.Errorf("%d answers from %s for %d acks", len(reply), scriptAck, n)
	}
	out := make([]AckOutcome, n)
	for i, code := range reply {
		out[i] = AckOutcome(num(code))
	}
	return out, nil
}

// ackLeftOnes sends the acks ack_noresult.lua left (leftToAck in out) to ack.lua and puts its
// answers in their places. When that call fails the whole batch fails, as when a reply is lost:
// the acks the first call made stay made, and acking them again answers AckNotFound.
func (s *Store) ackLeftOnes(ctx context.Context, k queueKeys, acks []Ack, out []AckOutcome) error {
	var left []int
	for i, o := range out {
		if o == leftToAck {
			left = append(left, i)
		}
	}
	if len(left) == 0 {
		return nil
	}
	rest := make([]Ack, len(left))
	for j, i := range left {
		rest[j] = acks[i]
	}
	restOut, err := s.ackWithScript(ctx, k, rest)
	if err != nil {
		return err
	}
	for j, i := range left {
		out[i] = restOut[j]
	}
	return nil
}

// acksWithoutResult reports whether no ack keeps a result: what ack_noresult.lua handles.
func acksWithoutResult(acks []Ack) bool {
	for _, a := range acks {
		if a.Result != nil {
			return false
		}
	}
	return true
}

// ackNoResult runs ack_noresult.lua for acks (acksWithoutResult).
func (s *Store) ackNoResult(ctx context.Context, k queueKeys, acks []Ack) ([]any, error) {
	fn := s.scripts.Function(string(scriptAckNoResult))
	return s.scripts.Process(ctx, func() *redis.Cmd {
		argv := make([]any, 0, 3+len(k.ackHead)+2*len(acks))
		argv = append(argv, "fcall", fn)
		argv = appendHead(argv, scriptAckNoResult, k, k.ackHead)
		for _, a := range acks {
			argv = append(argv, a.ID, a.Delivery)
		}
		cmd := redis.NewCmd(ctx, argv...)
		cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
		return cmd
	}).Slice()
}

// ackScriptArgs are ack.lua's own arguments for acks: their count, then four per ack.
func ackScriptArgs(acks []Ack) []any {
	args := make([]any, 0, 1+4*len(acks))
	args = append(args, len(acks))
	for _, a := range acks {
		hasResult := "0"
		if a.Result != nil {
			hasResult = "1"
		}
		args = append(args, a.ID, a.Delivery, hasResult, a.Result)
	}
	return args
}

// AckQueues finishes the deliveries of several queues, each batch all of one queue, with one
// ack.lua call per queue pipelined in one round trip. The outcomes are in the order of batches.
func (s *Store) AckQueues(ctx context.Context, batches [][]Ack) ([][]AckOutcome, error) {
	calls := make([]scriptCall, len(batches))
	for i, acks := range batches {
		calls[i] = scriptCall{script: scriptAck, keys: s.keys.get(acks[0].Namespace, acks[0].Queue), args: ackScriptArgs(acks)}
	}
	queueOf := func(i int) (string, string) { return batches[i][0].Namespace, batches[i][0].Queue }
	return readEach(ctx, s, calls, queueOf, func(i int, cmd *redis.Cmd) ([]AckOutcome, error) {
		reply, err := cmd.Slice()
		if err != nil {
			return nil, err
		}
		return ackOutcomes(reply, len(batches[i]))
	})
}

// Nack reports a failed delivery: the job is tried again after retryMs (-1: its backoff) while it
// has tries left and noRetry is false, else it goes to the dead letter. attempt, when not "", is
// kept in the record as RAttempt (the failed attempt's span, for the next one to link to); "" adds
// no argument and clears what an earlier nack kept. It returns what became of the job ("retried",
// "dead" or "expired"), or ErrNotFound or ErrLeaseLost.
func (s *Store) Nack(ctx context.Context, ns, q, id string, delivery int, lastError string, retryMs int64, noRetry bool, attempt string) (string, error) {
	noRetryArg := "0"
	if noRetry {
		noRetryArg = "1"
	}
	args := []any{id, delivery, lastError, retryMs, noRetryArg}
	if attempt != "" {
		args = append(args, attempt)
	}
	out, err := s.run(ctx, scriptNack, s.keys.get(ns, q), args...).Text()
	return out, scriptError(err)
}

// Touch extends a lease to now + ttrMs (0: the job's own TTR) and returns its new end (Unix ms),
// or ErrNotFound or ErrLeaseLost.
func (s *Store) Touch(ctx context.Context, ns, q, id string, delivery int, ttrMs int64) (int64, error) {
	until, err := s.run(ctx, scriptTouch, s.keys.get(ns, q), id, delivery, ttrMs).Int64()
	return until, scriptError(err)
}

// Release gives a leased job back unprocessed, or returns ErrNotFound or ErrLeaseLost.
func (s *Store) Release(ctx context.Context, ns, q, id string, delivery int) error {
	return scriptError(s.run(ctx, scriptRelease, s.keys.get(ns, q), id, delivery).Err())
}

// Lease names one delivery's lease.
type Lease struct {
	Namespace, Queue, ID string
	Delivery             int
}

// TouchMany extends many leases by ttrMs (0: each job's own TTR), one script call each, pipelined
// in one round trip. errs has one entry per lease (nil, ErrNotFound, ErrLeaseLost or the call's
// own error).
func (s *Store) TouchMany(ctx context.Context, leases []Lease, ttrMs int64) (errs []error, err error) {
	return s.leaseMany(ctx, scriptTouch, leases, func(l Lease) []any { return []any{l.ID, l.Delivery, ttrMs} })
}

// ReleaseMany gives many leased jobs back (Release), pipelined in one round trip.
func (s *Store) ReleaseMany(ctx context.Context, leases []Lease) (errs []error, err error) {
	return s.leaseMany(ctx, scriptRelease, leases, func(l Lease) []any { return []any{l.ID, l.Delivery} })
}

func (s *Store) leaseMany(ctx context.Context, script scriptName, leases []Lease, args func(Lease) []any) ([]error, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	calls := make([]scriptCall, len(leases))
	for i, l := range leases {
		calls[i] = scriptCall{script: script, keys: s.keys.get(l.Namespace, l.Queue), args: args(l)}
	}
	cmds, err := s.runMany(ctx, calls)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(leases))
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			errs[i] = scriptError(err)
		}
	}
	return errs, nil
}
