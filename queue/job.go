package queue

import (
	"time"
)

// State is where a job is in its life (docs/job-states.md).
type State string

// The states of a job. Expired and deleted jobs are gone: Get returns ErrNotFound.
const (
	StateDelayed State = "delayed" // waiting for its run time (or a retry's backoff)
	StateReady   State = "ready"   // waiting for a consumer
	StateLeased  State = "leased"  // delivered; the consumer holds a lease until ack, nack or expiry
	StateDead    State = "dead"    // out of tries (or nacked without retry): in the dead letter
	StateDone    State = "done"    // acked with a result, kept for the result retention
)

var stateByCode = map[int64]State{1: StateDelayed, 2: StateReady, 3: StateLeased, 4: StateDead, 5: StateDone}

// Backoff is a job's retry delay after a failed delivery when the nack names none: Base doubled
// for every try used, capped at Max (and at 7 days in any case). A zero Backoff retries at once.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Job is everything known about a job.
type Job struct {
	ID        string
	Namespace string
	Queue     string
	State     State
	Payload   []byte
	Priority  int
	// Tries is the number of deliveries the job may have; RemainingTries how many are left.
	Tries          int
	RemainingTries int
	// Deliveries counts every delivery since publish (it keeps counting across respawns); a lease is
	// named by its delivery number.
	Deliveries int
	// Position is the number of ready jobs a consumer gets before this one (0: next), or -1 when
	// the job is not ready. Jobs past their ttl that wait for housekeeping are not counted.
	Position   int
	TTL        time.Duration // lifetime while waiting (0: none)
	TTR        time.Duration // default lease length
	Backoff    Backoff
	UniqueKey  string
	Attributes map[string]string
	LastError  string
	Result     []byte
	// Callback is where Sluice delivers the job when it is due (nil: consumers get it).
	Callback *Callback

	PublishedAt time.Time
	DueAt       time.Time // when it became (or becomes) ready
	LeaseUntil  time.Time // zero unless leased
	ExpiresAt   time.Time // zero when it has no ttl
	FinishedAt  time.Time // when it went dead or done
}

// Delivery is a leased job handed to a consumer. Ack, Nack, Touch and Release name it by its
// Delivery number.
type Delivery struct {
	ID             string
	Namespace      string
	Queue          string
	Payload        []byte
	Priority       int
	Delivery       int // the delivery number; 1 for the first
	RemainingTries int // deliveries left after this one
	Attributes     map[string]string
	PublishedAt    time.Time
	Elapsed        time.Duration // from publish to this delivery
	LeaseUntil     time.Time
	ExpiresAt      time.Time // zero when the job has no ttl
	TTL            time.Duration
}

// fieldsPerJob is the length of one job in script replies (reply_job in lib.lua).
const fieldsPerJob = 22

// parseJob reads the fields reply_job writes.
func parseJob(ns, q string, f []any) Job {
	var r jobRecord
	for i, at := range replyNumbers {
		r.num[at] = num(f[1+i])
	}
	r.str[rUnique], r.str[rAttributes], r.str[rPayload] = str(f[12]), str(f[13]), str(f[14])
	r.str[rError], r.str[rResult], r.str[rCallback] = str(f[15]), str(f[16]), str(f[21])
	r.num[rFinished], r.num[rBackoffBase], r.num[rBackoffMax] = num(f[17]), num(f[19]), num(f[20])
	return r.job(ns, q, str(f[0]), num(f[18]))
}

// replyNumbers are the record fields reply_job sends first, in its order, after the id.
var replyNumbers = [...]int{rState, rPriority, rTries, rLeft, rDelivery, rTTL, rExpire, rTTR, rPublished, rDue, rLease}

func (j Job) delivery() Delivery {
	return Delivery{
		ID:             j.ID,
		Namespace:      j.Namespace,
		Queue:          j.Queue,
		Payload:        j.Payload,
		Priority:       j.Priority,
		Delivery:       j.Deliveries,
		RemainingTries: j.RemainingTries,
		Attributes:     j.Attributes,
		PublishedAt:    j.PublishedAt,
		LeaseUntil:     j.LeaseUntil,
		ExpiresAt:      j.ExpiresAt,
		TTL:            j.TTL,
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func bytesOrNil(v any) []byte {
	s, _ := v.(string)
	if s == "" {
		return nil
	}
	return []byte(s)
}

func num(v any) int64 {
	n, _ := v.(int64)
	return n
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func timeMs(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
