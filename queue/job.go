package queue

import (
	"encoding/json"
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
	j := Job{
		ID:             str(f[0]),
		Namespace:      ns,
		Queue:          q,
		State:          stateByCode[num(f[1])],
		Priority:       int(num(f[2])),
		Tries:          int(num(f[3])),
		RemainingTries: int(num(f[4])),
		Deliveries:     int(num(f[5])),
		TTL:            ms(num(f[6])),
		ExpiresAt:      timeMs(num(f[7])),
		TTR:            ms(num(f[8])),
		PublishedAt:    timeMs(num(f[9])),
		DueAt:          timeMs(num(f[10])),
		LeaseUntil:     timeMs(num(f[11])),
		UniqueKey:      str(f[12]),
		Payload:        bytesOrNil(f[14]),
		LastError:      str(f[15]),
		Result:         bytesOrNil(f[16]),
		FinishedAt:     timeMs(num(f[17])),
		Position:       int(num(f[18])),
		Backoff:        Backoff{Base: ms(num(f[19])), Max: ms(num(f[20]))},
	}
	if cb := str(f[21]); cb != "" {
		j.Callback = decodeCallback(cb)
	}
	if a := str(f[13]); a != "" {
		_ = json.Unmarshal([]byte(a), &j.Attributes) // written by Publish from a map: always valid
	}
	return j
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
