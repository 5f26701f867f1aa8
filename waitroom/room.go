package waitroom

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// State is where a visitor stands.
type State int

const (
	// Waiting: the visitor is in line.
	Waiting State = iota + 1
	// NotOpen: the room has not opened yet (RoomConfig.OpenAt); the visitor is in the draw.
	NotOpen
	// Admitted: the visitor holds a slot.
	Admitted
	// Unavailable: Redis could not be reached and the room fails closed.
	Unavailable
	// Left: the visitor's browser released its place a moment ago (Config.LeftWindow); its
	// requests do not put it in line again until then.
	Left
	// Entering: the request carried no visitor cookie; it got one, and the visitor's next request
	// (the waiting page's first poll) puts it in line.
	Entering
	// Limited: the visitor was not put in line: its client address added as many new visitors as
	// it may for now (or, from the HTTP handlers, it polled too often); try again after
	// Status.RetryAfter.
	Limited
	// Challenged: the line is long and the visitor joins it only with a proof of work
	// (Status.Challenge).
	Challenged
)

// String returns "waiting", "not_open", "admitted", "unavailable", "left", "entering", "limited"
// or "challenge" (the JSON form).
func (s State) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case NotOpen:
		return "not_open"
	case Admitted:
		return "admitted"
	case Unavailable:
		return "unavailable"
	case Left:
		return "left"
	case Entering:
		return "entering"
	case Limited:
		return "limited"
	case Challenged:
		return "challenge"
	default:
		return fmt.Sprintf("State(%d)", int(s))
	}
}

// Status is a visitor's place, as of one Arrive call.
type Status struct {
	Room    string
	Visitor string
	State   State
	// Position is the visitor's place in line, 1 at the head; 0 unless Waiting.
	Position int
	// Length is how many visitors are in line; Active and MaxActive how many hold a slot and may.
	Length, Active, MaxActive int
	// ETA is the expected wait from now, from the admissions of the last minutes (see ETAKnown).
	ETA time.Duration
	// ETAKnown is false while there is no rate to go by: no admission from the line recently and
	// no setting to estimate one from (see roomETA).
	ETAKnown bool
	// Waited is how long the visitor has been in line (until its admission, when Admitted).
	Waited time.Duration
	// OpensIn is the time left until the room opens, when NotOpen.
	OpensIn time.Duration
	// Pass is the signed pass of an admitted visitor (empty for a fail-open admission), valid
	// until PassExpires.
	Pass        string
	PassExpires time.Time
	// Degraded says the status was decided without Redis, by the room's fail-open setting.
	Degraded bool
	// RetryAfter is when to try again, when Limited or Challenged.
	RetryAfter time.Duration
	// Challenge is the proof-of-work challenge to solve, when Challenged, at ChallengeBits
	// (challenge.go).
	Challenge     string
	ChallengeBits int
	// pollLimited says a Limited status refused a poll of the visitor (too many polls), not its
	// arrival (its address's limit).
	pollLimited bool
}

// Progress is how far along the line the visitor is, from 0 to 1: the share of its expected
// total wait already behind it (0 while the ETA is unknown, 1 when admitted).
func (s Status) Progress() float64 {
	switch {
	case s.State == Admitted:
		return 1
	case s.State != Waiting || !s.ETAKnown:
		return 0
	case s.Waited+s.ETA <= 0:
		return 1
	}
	return float64(s.Waited) / float64(s.Waited+s.ETA)
}

// Counters are what one Room handle did in this process, for metrics.
type Counters struct {
	Arrivals, Admitted, Waiting           uint64 // Arrive calls and their outcomes
	PassAccepted, PassRejected, Touches   uint64 // requests checked by a pass; slot keep-alives
	Released                              uint64 // Release calls that freed a slot or left the line
	RedisErrors, FailedOpen, FailedClosed uint64 // decisions without Redis
	PollsLimited                          uint64 // status polls refused by the per-visitor limit
	ArrivalsLimited                       uint64 // new visitors kept out by their address's limit
	Challenged                            uint64 // new visitors asked for a proof of work
	Bypassed                              uint64 // requests let past the room by its BypassRules
}

// Room is one waiting room as seen by this process. Get it from Client.Room; it is safe for
// concurrent use.
type Room struct {
	c    *Client
	name string
	keys roomKeys

	state  atomic.Pointer[roomState] // nil until loaded
	loadMu sync.Mutex
	// used and stale spare an idle room the Maintainer's settings refresh: a refresh reloads only
	// the rooms used since the one before and marks the others stale; a stale room reloads at its
	// next use. 10,000 rooms that nobody visits cost Redis nothing.
	used, stale atomic.Bool
	touches     touchCache
	passes      *passCache
	// passCookieName is passCookie(name), made once: the hot path reads it on every request.
	passCookieName string

	arrivals, admitted, waiting, passAccepted, passRejected, touchCount, released,
	redisErrors, failedOpen, failedClosed, pollsLimited, arrivalsLimited, challenged, bypassedCount atomic.Uint64
}

// roomState is the cached copy of a room's settings.
type roomState struct {
	cfg     RoomConfig
	version int64
	page    *template.Template // the room's own template, nil for the built-in page
}

func newRoom(c *Client, name string) *Room {
	return &Room{c: c, name: name, keys: newRoomKeys(c.cfg.Prefix, name, c.cluster), touches: newTouchCache(), passes: newPassCache(),
		passCookieName: passCookie(name)}
}

// Name returns the room's name.
func (r *Room) Name() string { return r.name }

// Counters returns what this handle did so far.
func (r *Room) Counters() Counters {
	return Counters{
		Arrivals: r.arrivals.Load(), Admitted: r.admitted.Load(), Waiting: r.waiting.Load(),
		PassAccepted: r.passAccepted.Load(), PassRejected: r.passRejected.Load(), Touches: r.touchCount.Load(),
		Released: r.released.Load(), RedisErrors: r.redisErrors.Load(), FailedOpen: r.failedOpen.Load(),
		FailedClosed: r.failedClosed.Load(), PollsLimited: r.pollsLimited.Load(),
		ArrivalsLimited: r.arrivalsLimited.Load(), Challenged: r.challenged.Load(), Bypassed: r.bypassedCount.Load(),
	}
}

func (r *Room) store(cfg RoomConfig, version int64) {
	st := &roomState{cfg: cfg, version: version}
	if cfg.Template != "" {
		// Validated when set; a template that no longer parses falls back to the built-in page.
		st.page, _ = template.New(r.name).Parse(cfg.Template)
	}
	r.state.Store(st)
}

func (r *Room) forget() { r.state.Store(nil) }

// load reads the settings from Redis into the cache.
func (r *Room) load(ctx context.Context) (*roomState, error) {
	h, err := r.c.rdb.HGetAll(ctx, r.keys.config()).Result()
	if err != nil {
		return nil, fmt.Errorf("waitroom: read room %s: %w", r.name, err)
	}
	if len(h) == 0 {
		r.forget()
		return nil, ErrRoomNotFound
	}
	cfg, version := parseRoomConfig(h)
	r.store(cfg, version)
	r.stale.Store(false)
	return r.state.Load(), nil
}

// cached returns the cached settings, loading them when there are none yet or when the
// Maintainer marked them stale (the room was not used for a refresh interval). A stale copy is
// still served when Redis cannot be read: it is what fail-open and passes decide by.
func (r *Room) cached(ctx context.Context) (*roomState, error) {
	if !r.used.Load() {
		r.used.Store(true)
	}
	if st := r.state.Load(); st != nil && !r.stale.Load() {
		return st, nil
	}
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	old := r.state.Load()
	if old != nil && !r.stale.Load() {
		return old, nil
	}
	st, err := r.load(ctx)
	if err != nil && old != nil && !errors.Is(err, ErrRoomNotFound) {
		r.stale.Store(false) // retried at the next refresh, not by every request while Redis is down
		return old, nil
	}
	return st, err
}

// refresh is the Maintainer's settings refresh of this handle: a reload when the room was used
// since the last refresh, else a stale mark (no Redis call).
func (r *Room) refresh(ctx context.Context) error {
	if r.state.Load() == nil {
		return nil
	}
	if !r.used.Swap(false) {
		r.stale.Store(true)
		return nil
	}
	_, err := r.load(ctx)
	return err
}

// Config returns the room's settings as this process last saw them (at most Config.ConfigRefresh
// old while a Maintainer runs), loading them when needed.
func (r *Room) Config(ctx context.Context) (RoomConfig, error) {
	st, err := r.cached(ctx)
	if err != nil {
		return RoomConfig{}, err
	}
	return st.cfg, nil
}

// validVisitor is the rule for visitor ids passed to Arrive, Touch and Release.
func validVisitor(v string) bool { return v != "" && len(v) <= 128 }

// Arrive is a visitor's arrival or status poll: it puts the visitor in line (or keeps its place),
// records the heartbeat, and admits it when it is at the head and a slot is free. An admitted
// visitor gets a signed pass. One script call decides and takes the slot, so the room never holds
// more than MaxActive visitors whatever the number of instances.
//
// When Redis cannot be reached the room's FailOpen setting decides (Status.Degraded): admitted
// without a pass, or Unavailable. The error is non-nil only for a bad visitor id, an unknown room
// or an ended ctx.
//
// A visitor new to the line is not held to a per-address limit here (there is no address), but
// a long line's challenge applies: Arrive answers Challenged, and only the HTTP handlers take
// proofs.
func (r *Room) Arrive(ctx context.Context, visitor string) (Status, error) {
	return r.arrive(ctx, visitor, entry{})
}

func (r *Room) decideArrival(ctx context.Context, visitor string, e entry) (Status, error) {
	if !validVisitor(visitor) {
		return Status{}, errors.New("waitroom: visitor id must be 1 to 128 bytes")
	}
	r.arrivals.Add(1)
	st := Status{Room: r.name, Visitor: visitor}
	if r.c.redisDown() {
		return r.degraded(ctx, st, errRedisDown)
	}
	var shuffle [8]byte
	_, _ = rand.Read(shuffle[:])
	ticket := binary.LittleEndian.Uint64(shuffle[:]) >> 12 // below 2^52
	pollRate := 0
	if e.poll {
		pollRate = r.c.cfg.PollsPerMinute
	}
	vals, err := r.c.scripts.Run(ctx, scriptArrive, r.keys.arrive(e.addr, visitor), visitor, ticket, r.c.cfg.Batch,
		r.c.liveGrace().Milliseconds(), r.c.cfg.ArrivalsPerMinute, e.addr != "", e.proofID,
		e.proofExpires.UnixMilli(), pollRate, max(1, pollRate/3), r.c.calls.next(), r.c.cfg.LeftWindow.Milliseconds()).Int64Slice()
	if err != nil {
		if ctx.Err() != nil {
			return Status{}, ctx.Err()
		}
		r.c.markDown()
		return r.degraded(ctx, st, err)
	}
	r.c.markUp()
	if vals[0] == 0 {
		r.forget()
		return Status{}, ErrRoomNotFound
	}
	if vals[0] == 6 {
		r.pollsLimited.Add(1)
		st.State, st.RetryAfter, st.pollLimited = Limited, time.Duration(vals[6])*time.Millisecond, true
		return st, nil
	}
	state, err := r.current(ctx, vals[5])
	if err != nil {
		return Status{}, err
	}
	st.Position, st.Length, st.Active, st.MaxActive = int(vals[1]), int(vals[2]), int(vals[3]), int(vals[4])
	st.OpensIn = time.Duration(vals[6]) * time.Millisecond
	st.Waited = time.Duration(vals[7]) * time.Millisecond
	switch vals[0] {
	case 1:
		st.State = Admitted
		r.admitted.Add(1)
		st.PassExpires = time.Now().Add(state.cfg.PassTTL)
		st.Pass = r.c.issuePass(r.name, visitor, e.binding, st.PassExpires)
		r.touches.mark(visitor, time.Now())
		if h := r.c.cfg.Hooks.Admitted; h != nil && st.Waited > 0 {
			h(r.name, st.Waited)
		}
	case 2:
		st.State = Waiting
		r.waiting.Add(1)
		st.ETA, st.ETAKnown = roomETA(state.cfg, st.Position, vals[8], vals[9])
	case 4:
		st.State = Limited
		st.RetryAfter = time.Duration(vals[6]) * time.Millisecond
		r.arrivalsLimited.Add(1)
	case 5:
		st.State = Challenged
		r.challenged.Add(1)
	case 7:
		st.State = Left
	default:
		st.State = NotOpen
		r.waiting.Add(1)
	}
	return st, nil
}

// liveGrace is how long after its last poll a waiting visitor counts as live: two poll intervals.
// A free slot goes to the first live visitor in line; a silent one ahead keeps its place number but
// is skipped until it polls again (or leaves the line at the room's queue_timeout).
func (c *Client) liveGrace() time.Duration { return 2 * c.cfg.PollInterval }

// current returns the cached settings, reloaded first when Redis has a newer version.
func (r *Room) current(ctx context.Context, version int64) (*roomState, error) {
	if st := r.state.Load(); st != nil && st.version >= version {
		return st, nil
	}
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if st := r.state.Load(); st != nil && st.version >= version {
		return st, nil
	}
	return r.load(ctx)
}

// errRedisDown stands for the error that made the client stop trying Redis for a moment.
var errRedisDown = errors.New("waitroom: redis unreachable (retrying shortly)")

// degraded decides without Redis, by the room's cached FailOpen (closed when never loaded).
func (r *Room) degraded(ctx context.Context, st Status, err error) (Status, error) {
	r.redisErrors.Add(1)
	if h := r.c.cfg.Hooks.RedisError; h != nil {
		h(r.name, err)
	}
	st.Degraded = true
	if cur := r.state.Load(); cur != nil && cur.cfg.FailOpen {
		r.failedOpen.Add(1)
		st.State = Admitted
		return st, nil
	}
	r.failedClosed.Add(1)
	st.State = Unavailable
	if !errors.Is(err, errRedisDown) {
		r.c.cfg.Logger.WarnContext(ctx, "waitroom: deciding without redis", "room", r.name, "error", err)
	}
	return st, nil
}

// CheckPass reports whether value is a valid, unexpired pass of this room, without calling Redis.
// A bound pass (Pass.Binding) is good only beside its visitor cookie, which the HTTP handlers
// check and CheckPass, given the pass alone, cannot.
func (r *Room) CheckPass(value string) (Pass, bool) { return r.checkPass(value, nil) }

// checkPass is CheckPass; with a request, a bound pass is refused unless the request carries the
// visitor cookie it is bound to.
func (r *Room) checkPass(value string, req *http.Request) (Pass, bool) {
	now := time.Now()
	p, ok := r.passes.get(value, now)
	if !ok {
		if p, ok = r.c.checkPassValue(r.name, value, now); ok {
			r.passes.put(value, p)
		}
	}
	if ok && req != nil && p.Binding != "" && !r.boundTo(value, p, req) {
		p, ok = Pass{}, false
	}
	if ok {
		r.passAccepted.Add(1)
	} else {
		r.passRejected.Add(1)
	}
	return p, ok
}

// Touch keeps an admitted visitor's slot alive. It calls Redis at most once per
// Config.TouchInterval per visitor and process, and reports whether the visitor still holds a
// slot, with a refreshed pass when Redis was asked (empty otherwise: the old one stands). A
// visitor whose slot was freed gets one back only when one is free and nobody waits; otherwise it
// must queue again. A visitor released (Release) gets none back: its passes are refused until
// the room's session_timeout and a minute have passed, or it is admitted again. While Redis
// cannot be reached the pass alone decides.
func (r *Room) Touch(ctx context.Context, visitor string) (held bool, pass string, expires time.Time, err error) {
	return r.touch(ctx, visitor, "")
}

// touch is Touch; a refreshed pass is bound as binding says (a bound pass's refresh stays bound).
func (r *Room) touch(ctx context.Context, visitor, binding string) (held bool, pass string, expires time.Time, err error) {
	now := time.Now()
	if !r.touches.due(visitor, now, r.c.cfg.TouchInterval) || r.c.redisDown() {
		return true, "", time.Time{}, nil
	}
	r.touchCount.Add(1)
	code, err := r.c.scripts.Run(ctx, scriptTouch, r.keys, visitor, r.c.cfg.Batch).Int()
	if err != nil {
		if ctx.Err() != nil {
			return false, "", time.Time{}, ctx.Err()
		}
		r.c.markDown()
		r.redisErrors.Add(1)
		return true, "", time.Time{}, nil
	}
	r.c.markUp()
	switch code {
	case -1:
		r.forget()
		return false, "", time.Time{}, ErrRoomNotFound
	case 0, 3: // no slot, or released lately (touch.lua): the pass is refused
		r.touches.forget(visitor)
		return false, "", time.Time{}, nil
	}
	st, err := r.cached(ctx)
	if err != nil {
		return false, "", time.Time{}, err
	}
	r.touches.mark(visitor, now)
	expires = now.Add(st.cfg.PassTTL)
	return true, r.c.issuePass(r.name, visitor, binding, expires), expires, nil
}

// Release frees the visitor's slot at once (or takes it out of the line), so the next visitor can
// come in. It reports whether the visitor held a slot or a place.
func (r *Room) Release(ctx context.Context, visitor string) (bool, error) {
	if !validVisitor(visitor) {
		return false, errors.New("waitroom: visitor id must be 1 to 128 bytes")
	}
	r.touches.forget(visitor)
	code, err := r.c.scripts.Run(ctx, scriptRelease, r.keys.once(), visitor).Int()
	if err != nil {
		return false, fmt.Errorf("waitroom: release in room %s: %w", r.name, err)
	}
	if code == -1 {
		return false, ErrRoomNotFound
	}
	if code > 0 {
		r.released.Add(1)
	}
	return code > 0, nil
}

// RoomStats are a room's live figures, read from Redis.
type RoomStats struct {
	Room               string
	Active, Waiting    int
	MaxActive          int
	AdmittedPerMinute  float64 // over the last minutes (see docs/waitroom.md)
	AbandonedPerMinute float64
	// MedianWait is the median wait of the latest (up to 101) admissions; 0 without any.
	MedianWait time.Duration
	// Totals since the room was created or reset.
	Admitted, Abandoned, Released, Expired int64
}

// Stats reads the room's live figures in one script call.
func (r *Room) Stats(ctx context.Context) (RoomStats, error) {
	vals, err := r.c.scripts.Run(ctx, scriptStats, r.keys).Int64Slice()
	if err != nil {
		return RoomStats{}, fmt.Errorf("waitroom: stats of room %s: %w", r.name, err)
	}
	if vals[0] == 0 {
		return RoomStats{}, ErrRoomNotFound
	}
	st, err := r.current(ctx, vals[10])
	if err != nil {
		return RoomStats{}, err
	}
	s := RoomStats{
		Room: r.name, Active: int(vals[1]), Waiting: int(vals[2]), MaxActive: st.cfg.MaxActive,
		Admitted: vals[3], Abandoned: vals[4], Released: vals[5], Expired: vals[6],
		MedianWait: time.Duration(median(vals[11:])) * time.Millisecond,
	}
	// Over at least a minute: a young room's first admissions (filling its free slots at once)
	// would otherwise read as thousands a minute.
	window := max(vals[9], 60_000)
	s.AdmittedPerMinute = float64(vals[7]) * 60000 / float64(window)
	s.AbandonedPerMinute = float64(vals[8]) * 60000 / float64(window)
	return s, nil
}

// maintain runs one housekeeping step on the room.
func (r *Room) maintain(ctx context.Context) (freed, abandoned int, err error) {
	vals, err := r.c.scripts.Run(ctx, scriptMaintain, r.keys, r.c.cfg.Batch).Int64Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("waitroom: maintain room %s: %w", r.name, err)
	}
	if len(vals) < 2 || vals[0] < 0 {
		return 0, 0, ErrRoomNotFound
	}
	if h := r.c.cfg.Hooks.Abandoned; h != nil && vals[1] > 0 {
		h(r.name, int(vals[1]))
	}
	return int(vals[0]), int(vals[1]), nil
}
