package queue

import (
	"encoding/json"
	"time"

	"github.com/sluicehq/sluice/queue/internal/store"
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

// stateByCode is the State of each state a record holds.
var stateByCode = map[int64]State{
	store.StateDelayed: StateDelayed, store.StateReady: StateReady, store.StateLeased: StateLeased,
	store.StateDead: StateDead, store.StateDone: StateDone,
}

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

// jobOf is the Job of namespace ns and queue q that j, as the store read it back, describes.
func jobOf(ns, q string, j *store.Job) Job {
	out := Job{
		ID:             j.ID,
		Namespace:      ns,
		Queue:          q,
		State:          stateByCode[j.Num(store.RState)],
		Priority:       int(j.Num(store.RPriority)),
		Tries:          int(j.Num(store.RTries)),
		RemainingTries: int(j.Num(store.RLeft)),
		Deliveries:     int(j.Num(store.RDelivery)),
		TTL:            ms(j.Num(store.RTTL)),
		ExpiresAt:      timeMs(j.Num(store.RExpire)),
		TTR:            ms(j.Num(store.RTTR)),
		PublishedAt:    timeMs(j.Num(store.RPublished)),
		DueAt:          timeMs(j.Num(store.RDue)),
		LeaseUntil:     timeMs(j.Num(store.RLease)),
		UniqueKey:      j.Str(store.RUnique),
		Payload:        bytesOrNil(j.Str(store.RPayload)),
		LastError:      j.Str(store.RError),
		Result:         bytesOrNil(j.Str(store.RResult)),
		FinishedAt:     timeMs(j.Num(store.RFinished)),
		Position:       int(j.Position),
		Backoff:        Backoff{Base: ms(j.Num(store.RBackoffBase)), Max: ms(j.Num(store.RBackoffMax))},
	}
	if cb := j.Str(store.RCallback); cb != "" {
		out.Callback = decodeCallback(cb)
	}
	if a := j.Str(store.RAttributes); a != "" {
		_ = json.Unmarshal([]byte(a), &out.Attributes) // written by Publish from a map: always valid
	}
	if a := j.Str(store.RAttempt); a != "" { // kept by a traced nack: shown as an attribute
		if out.Attributes == nil {
			out.Attributes = make(map[string]string, 1)
		}
		out.Attributes[AttributePreviousAttempt] = a
	}
	return out
}

// appendJobs appends jobOf of each of js to dst.
func appendJobs(dst []Job, ns, q string, js []store.Job) []Job {
	for i := range js {
		dst = append(dst, jobOf(ns, q, &js[i]))
	}
	return dst
}

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

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func timeMs(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
