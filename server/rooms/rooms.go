package rooms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/waitroom"
)

// Config is what the room routes need from the server that mounts them.
type Config struct {
	// Client is the waiting room client (the server's Redis, prefix and pass keys).
	Client *waitroom.Client
	// ProxyHosts maps a Host to the room whose reverse proxy serves it ("*": every request no
	// other route takes).
	ProxyHosts map[string]string
}

// API serves the room routes.
type API struct {
	cfg    Config
	client *waitroom.Client
	public *waitroom.Handler
}

// New returns the room routes on cfg's client.
func New(cfg Config) *API {
	a := &API{cfg: cfg, client: cfg.Client}
	if cfg.Client != nil {
		a.public = cfg.Client.Handler(waitroom.HandlerConfig{})
	}
	return a
}

// AdminRoutes are the room management routes of the admin listener.
func (a *API) AdminRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /v1/rooms", Handler: a.list},
		{Pattern: "PUT /v1/rooms/{room}", Handler: a.put},
		{Pattern: "GET /v1/rooms/{room}", Handler: a.get},
		// The room, its line and its figures go. Passes already issued stay valid until they
		// expire; the room's routes answer not found.
		{Pattern: "DELETE /v1/rooms/{room}", Handler: a.roomAction("deleted", (*waitroom.Client).DeleteRoom)},
		// Every admitted and waiting visitor leaves and the figures start over; the settings stay.
		{Pattern: "POST /v1/rooms/{room}/reset", Handler: a.roomAction("reset", (*waitroom.Client).ResetRoom)},
		// The fields sent change, the others stay (a JSON merge patch).
		{Pattern: "PATCH /v1/rooms/{room}", Handler: a.patch},
	}
}

// PublicRoutes are the visitors' routes of the public listener. They need no token: a visitor is
// its signed cookie, and its polls are limited per visitor by the waitroom package.
func (a *API) PublicRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /v1/rooms/{room}/status", Handler: a.status},
		{Pattern: "GET /v1/rooms/{room}/check", Handler: a.check},
		{Pattern: "POST /v1/rooms/{room}/release", Handler: a.release},
		{Pattern: "GET /v1/rooms/{room}/wait", Handler: a.wait},
		{Pattern: "GET " + waitroom.JWKSPath, Handler: a.jwks},
	}
}

func (a *API) status(w http.ResponseWriter, r *http.Request) error  { return a.public.Status(w, r) }
func (a *API) check(w http.ResponseWriter, r *http.Request) error   { return a.public.Check(w, r) }
func (a *API) release(w http.ResponseWriter, r *http.Request) error { return a.public.Release(w, r) }
func (a *API) wait(w http.ResponseWriter, r *http.Request) error    { return a.public.Wait(w, r) }
func (a *API) jwks(w http.ResponseWriter, r *http.Request) error    { return a.public.JWKS(w, r) }

// MountProxies mounts the reverse proxy of each room in ProxyHosts on mux, for its host (or, for
// "*", for every request no other pattern takes), as route makes it of waitroom.Proxy's handler.
func (a *API) MountProxies(mux *http.ServeMux, route func(proxy http.Handler) http.Handler) error {
	for host, name := range a.cfg.ProxyHosts {
		room, err := a.client.Room(name)
		if err != nil {
			return fmt.Errorf("proxy host %s: %w", host, err)
		}
		pattern := host + "/"
		if host == "*" {
			pattern = "/"
		}
		mux.Handle(pattern, route(waitroom.Proxy(room)))
	}
	return nil
}

// HasProxies reports whether MountProxies mounts any room's proxy.
func (a *API) HasProxies() bool { return len(a.cfg.ProxyHosts) > 0 }

// ParseProxyHosts reads "host=room,host=room" ("*=room" for every host).
func ParseProxyHosts(s string) (map[string]string, error) {
	out := make(map[string]string)
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		host, room, ok := strings.Cut(part, "=")
		host, room = strings.TrimSpace(host), strings.TrimSpace(room)
		if !ok || host == "" || room == "" || strings.ContainsAny(host, "/ ") {
			return nil, fmt.Errorf("%q is not host=room", part)
		}
		if _, dup := out[host]; dup {
			return nil, fmt.Errorf("host %s is named twice", host)
		}
		out[host] = room
	}
	return out, nil
}

// RoomJSON is a room's settings as the API reads and writes them; durations are in seconds.
type RoomJSON struct {
	MaxActive         *int     `json:"max_active"`
	NewUsersPerMinute *int     `json:"new_users_per_minute,omitempty"`
	SessionTimeout    *float64 `json:"session_timeout,omitempty"`
	QueueTimeout      *float64 `json:"queue_timeout,omitempty"`
	PassTTL           *float64 `json:"pass_ttl,omitempty"`
	Upstream          *string  `json:"upstream,omitempty"`
	OpenAt            *string  `json:"open_at,omitempty"`
	Template          *string  `json:"template,omitempty"`
	Language          *string  `json:"language,omitempty"`
	SiteName          *string  `json:"site_name,omitempty"`
	LogoURL           *string  `json:"logo_url,omitempty"`
	FailOpen          *bool    `json:"fail_open,omitempty"`
	ArrivalsPerMinute *int     `json:"arrivals_per_minute,omitempty"`
	ChallengeAbove    *int     `json:"challenge_above,omitempty"`
	ChallengeBits     *int     `json:"challenge_bits,omitempty"`
	ChallengeWait     *float64 `json:"challenge_wait,omitempty"`
	// Bypass is the room's bypass rules; its secret is write-only (a view says only whether one
	// is set), so a PUT that should keep it sends it again.
	Bypass *waitroom.BypassRules `json:"bypass,omitempty"`
}

// Config turns the JSON into the room's settings; errors name the field.
func (j RoomJSON) Config() (waitroom.RoomConfig, error) {
	var c waitroom.RoomConfig
	if j.MaxActive == nil {
		return c, httpapi.InvalidArg("max_active", "is required")
	}
	c.MaxActive = *j.MaxActive
	if j.NewUsersPerMinute != nil {
		c.NewUsersPerMinute = *j.NewUsersPerMinute
	}
	var err error
	if c.SessionTimeout, err = httpapi.Seconds("session_timeout", j.SessionTimeout); err != nil {
		return c, err
	}
	if c.QueueTimeout, err = httpapi.Seconds("queue_timeout", j.QueueTimeout); err != nil {
		return c, err
	}
	if c.PassTTL, err = httpapi.Seconds("pass_ttl", j.PassTTL); err != nil {
		return c, err
	}
	if j.OpenAt != nil && *j.OpenAt != "" {
		t, err := time.Parse(time.RFC3339, *j.OpenAt)
		if err != nil {
			return c, httpapi.InvalidArg("open_at", "%q is not an RFC 3339 time", *j.OpenAt)
		}
		c.OpenAt = t
	}
	if c.ChallengeWait, err = httpapi.Seconds("challenge_wait", j.ChallengeWait); err != nil {
		return c, err
	}
	c.ArrivalsPerMinute, c.ChallengeAbove, c.ChallengeBits = deref(j.ArrivalsPerMinute), deref(j.ChallengeAbove), deref(j.ChallengeBits)
	c.Bypass = deref(j.Bypass)
	c.Upstream = deref(j.Upstream)
	c.Template = deref(j.Template)
	c.Language = deref(j.Language)
	c.SiteName = deref(j.SiteName)
	c.LogoURL = deref(j.LogoURL)
	c.FailOpen = j.FailOpen != nil && *j.FailOpen
	return c, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// RoomView is a room as the API answers: its settings (defaults filled in) and live figures.
type RoomView struct {
	Name              string     `json:"name"`
	MaxActive         int        `json:"max_active"`
	NewUsersPerMinute int        `json:"new_users_per_minute"`
	SessionTimeout    float64    `json:"session_timeout"`
	QueueTimeout      float64    `json:"queue_timeout"`
	PassTTL           float64    `json:"pass_ttl"`
	Upstream          string     `json:"upstream"`
	OpenAt            *time.Time `json:"open_at"`
	Template          string     `json:"template"`
	Language          string     `json:"language"`
	SiteName          string     `json:"site_name"`
	LogoURL           string     `json:"logo_url"`
	FailOpen          bool       `json:"fail_open"`
	ArrivalsPerMinute int        `json:"arrivals_per_minute"`
	ChallengeAbove    int        `json:"challenge_above"`
	ChallengeBits     int        `json:"challenge_bits"`
	ChallengeWait     float64    `json:"challenge_wait"`
	Bypass            BypassView `json:"bypass"`
	Stats             *StatsView `json:"stats,omitempty"`
}

// BypassView is a room's bypass rules as the API shows them: the secret never leaves.
type BypassView struct {
	Paths      []string `json:"paths"`
	UserAgents []string `json:"user_agents"`
	SecretSet  bool     `json:"secret_set"`
}

// StatsView is a room's live figures.
type StatsView struct {
	Active             int     `json:"active"`
	Waiting            int     `json:"waiting"`
	AdmittedPerMinute  float64 `json:"admitted_per_minute"`
	AbandonedPerMinute float64 `json:"abandoned_per_minute"`
	MedianWaitSeconds  float64 `json:"median_wait_seconds"`
	AdmittedTotal      int64   `json:"admitted_total"`
	AbandonedTotal     int64   `json:"abandoned_total"`
	ReleasedTotal      int64   `json:"released_total"`
	ExpiredTotal       int64   `json:"expired_total"`
}

func view(name string, c waitroom.RoomConfig, st *waitroom.RoomStats) RoomView {
	v := RoomView{
		Name: name, MaxActive: c.MaxActive, NewUsersPerMinute: c.NewUsersPerMinute,
		SessionTimeout: c.SessionTimeout.Seconds(), QueueTimeout: c.QueueTimeout.Seconds(), PassTTL: c.PassTTL.Seconds(),
		Upstream: c.Upstream, Template: c.Template, Language: c.Language, FailOpen: c.FailOpen,
		ArrivalsPerMinute: c.ArrivalsPerMinute, ChallengeAbove: c.ChallengeAbove, ChallengeBits: c.ChallengeBits,
		ChallengeWait: c.ChallengeWait.Seconds(),
		SiteName:      c.SiteName, LogoURL: c.LogoURL,
		Bypass: BypassView{Paths: orEmpty(c.Bypass.Paths), UserAgents: orEmpty(c.Bypass.UserAgents), SecretSet: c.Bypass.Secret != ""},
	}
	if !c.OpenAt.IsZero() {
		t := c.OpenAt.UTC()
		v.OpenAt = &t
	}
	if st != nil {
		v.Stats = &StatsView{
			Active: st.Active, Waiting: st.Waiting,
			AdmittedPerMinute: round2(st.AdmittedPerMinute), AbandonedPerMinute: round2(st.AbandonedPerMinute),
			MedianWaitSeconds: st.MedianWait.Seconds(),
			AdmittedTotal:     st.Admitted, AbandonedTotal: st.Abandoned, ReleasedTotal: st.Released, ExpiredTotal: st.Expired,
		}
	}
	return v
}

// orEmpty is list, or an empty one for nil: a JSON [] rather than null.
func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// get is GET /v1/rooms/{room}: settings and live figures.
func (a *API) get(w http.ResponseWriter, r *http.Request) error {
	v, err := a.roomView(r.Context(), r.PathValue("room"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
	return nil
}

func (a *API) roomView(ctx context.Context, name string) (RoomView, error) {
	cfg, err := a.client.GetRoom(ctx, name)
	if err != nil {
		return RoomView{}, err
	}
	room, err := a.client.Room(name)
	if err != nil {
		return RoomView{}, err
	}
	st, err := room.Stats(ctx)
	if err != nil {
		return RoomView{}, err
	}
	return view(name, cfg, &st), nil
}

// list is GET /v1/rooms: every room with its live figures.
func (a *API) list(w http.ResponseWriter, r *http.Request) error {
	names, err := a.client.Rooms(r.Context())
	if err != nil {
		return err
	}
	out := make([]RoomView, 0, len(names))
	for _, name := range names {
		v, err := a.roomView(r.Context(), name)
		if errors.Is(err, waitroom.ErrRoomNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"rooms": out})
	return nil
}

// roomAction serves an action on the path's room: op does it with the API's client, and the
// answer says so, {"room": name, done: true}. (op is a method of the client's type, so listing the
// routes reads nothing of a.)
func (a *API) roomAction(done string, op func(c *waitroom.Client, ctx context.Context, room string) error) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("room")
		if err := op(a.client, r.Context(), name); err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]any{"room": name, done: true})
		return nil
	}
}
