package waitroom

import (
	"cmp"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/ratelimit"
)

// Config configures a Client. PassKeys is required; every other field has a default.
type Config struct {
	// Prefix starts every key the package writes. Default "sluice". Must not contain '{' or '}'.
	Prefix string

	// PassKeys sign and check the visitor and pass cookies (HMAC-SHA256). The first key signs; every
	// key is accepted, so a key is rotated by putting the new one first and dropping the old one
	// once the longest pass signed with it has expired. Required: one or two keys of at least 32
	// bytes, the same on every instance that serves a room.
	PassKeys [][]byte

	// PassTokenKeys, when set, make passes JWTs signed with Ed25519 (alg EdDSA) that the protected
	// site can verify itself with the public keys (Client.JWKS, served at JWKSPath). The first key
	// signs; every key verifies and is published, so a key is rotated as PassKeys are (publish the
	// new one second, then put it first, then drop the old one once its passes have expired). HMAC
	// passes issued before stay good until they expire. PassKeys still sign the visitor cookie.
	// Default none: HMAC passes (checked by Sluice only). At most three keys, the same on every
	// instance (SharedPassTokenKey makes one kept in Redis).
	PassTokenKeys []ed25519.PrivateKey

	// BindPasses binds each token pass issued over HTTP to the visitor cookie of its browser (the
	// SHA-256 of the cookie in the pass's cnf claim): Sluice refuses a bound pass that comes
	// without that cookie, and the protected site can check the same, so a copied pass cookie
	// admits nobody. Needs PassTokenKeys. Default false.
	BindPasses bool

	// Batch is the most idle slots or silent visitors one script call removes, which bounds how
	// long a call can block Redis. Default 100.
	Batch int

	// TouchInterval is how often, at most, a request with a pass keeps its slot alive in Redis
	// (per visitor and process); requests in between are checked by the pass alone. Default 5s.
	TouchInterval time.Duration

	// PollInterval is how often the waiting page asks for the visitor's status. Default 5s.
	PollInterval time.Duration

	// PollsPerMinute limits the status polls (and waiting page loads) of one visitor in one room.
	// Default 30.
	PollsPerMinute int

	// ArrivalsPerMinute limits how many new visitors one client address (an IPv6 address: its
	// /64) puts in one room's line per minute, with bursts of as many at once; a room's
	// RoomConfig.ArrivalsPerMinute overrides it. A visitor already in line or admitted is not
	// counted again. Default 60; negative: no limit.
	ArrivalsPerMinute int

	// ClientAddr names a request's client address for ArrivalsPerMinute. Default: the address of
	// the connection (r.RemoteAddr). Behind a reverse proxy (nginx, a load balancer) that is the
	// proxy's: give a function that believes its X-Forwarded-For, or every visitor shares one
	// address and one limit.
	ClientAddr func(r *http.Request) string

	// LeftWindow is how long after a release the visitor's browser is known to have left the room
	// (a cookie): its requests in that time (the favicon, an asset, a last click) do not put it in
	// line again. Default 30s.
	LeftWindow time.Duration

	// ConfigRefresh is how often the Maintainer reloads the settings of the rooms this process
	// serves (the admission scripts read max_active and the timeouts from Redis themselves; the
	// cached copy only serves pages, passes, bypass rules, the upstream and fail-open). Only the
	// rooms used since the previous refresh are reloaded; one not used meanwhile reloads at its
	// next use, so idle rooms cost Redis nothing. Default 1s.
	ConfigRefresh time.Duration

	// SecureCookies marks the cookies Secure even on plain-HTTP requests (for a TLS-terminating
	// proxy in front). Requests that arrive over TLS always get Secure cookies. Default false.
	SecureCookies bool

	// UpstreamDialTimeout bounds the reverse proxy's (Proxy) connection to a room's upstream.
	// Default 30s.
	UpstreamDialTimeout time.Duration

	// UpstreamHeaderTimeout bounds the reverse proxy's wait for the upstream's response header
	// once the request was sent; the answer to a request that waits longer is 502. Default 0: no
	// bound (an upstream that holds requests, long polls say, is not cut off).
	UpstreamHeaderTimeout time.Duration

	// Hooks are called on admissions and failures, for metrics. Default none.
	Hooks Hooks

	// Logger receives warnings (Redis failures, maintenance errors). Default slog.Default().
	Logger *slog.Logger
}

// Hooks are callbacks for metrics. They run on the request's goroutine and must be quick.
type Hooks struct {
	// Admitted is called when a visitor is admitted, with how long it waited in line.
	Admitted func(room string, waited time.Duration)
	// Abandoned is called when the Maintainer removes n visitors who stopped polling.
	Abandoned func(room string, n int)
	// RedisError is called when a decision had to be made without Redis.
	RedisError func(room string, err error)
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.Batch = cmp.Or(c.Batch, 100)
	c.ArrivalsPerMinute = cmp.Or(c.ArrivalsPerMinute, 60)
	if c.ClientAddr == nil {
		c.ClientAddr = ratelimit.KeyByIP
	}
	c.LeftWindow = cmp.Or(c.LeftWindow, 30*time.Second)
	c.TouchInterval = cmp.Or(c.TouchInterval, 5*time.Second)
	c.PollInterval = cmp.Or(c.PollInterval, 5*time.Second)
	c.PollsPerMinute = cmp.Or(c.PollsPerMinute, 30)
	c.ConfigRefresh = cmp.Or(c.ConfigRefresh, time.Second)
	c.UpstreamDialTimeout = cmp.Or(c.UpstreamDialTimeout, 30*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case !validPrefix(c.Prefix):
		return fmt.Errorf("waitroom: Config.Prefix must not contain '{' or '}', got %q", c.Prefix)
	case c.LeftWindow < time.Second:
		return fmt.Errorf("waitroom: Config.LeftWindow must be at least 1s, got %s", c.LeftWindow)
	case len(c.PassKeys) == 0 || len(c.PassKeys) > 2:
		return fmt.Errorf("waitroom: Config.PassKeys must hold one or two keys, got %d", len(c.PassKeys))
	case c.ArrivalsPerMinute > maxArrivalsPerMinute:
		return fmt.Errorf("waitroom: Config.ArrivalsPerMinute must be at most %d, got %d", maxArrivalsPerMinute, c.ArrivalsPerMinute)
	case c.Batch < 1:
		return fmt.Errorf("waitroom: Config.Batch must be at least 1, got %d", c.Batch)
	case c.TouchInterval < 0:
		return fmt.Errorf("waitroom: Config.TouchInterval must not be negative, got %s", c.TouchInterval)
	case c.PollInterval < 100*time.Millisecond:
		return fmt.Errorf("waitroom: Config.PollInterval must be at least 100ms, got %s", c.PollInterval)
	case c.PollsPerMinute < 1:
		return fmt.Errorf("waitroom: Config.PollsPerMinute must be at least 1, got %d", c.PollsPerMinute)
	case c.ConfigRefresh < 0:
		return fmt.Errorf("waitroom: Config.ConfigRefresh must not be negative, got %s", c.ConfigRefresh)
	case c.UpstreamDialTimeout < 0:
		return fmt.Errorf("waitroom: Config.UpstreamDialTimeout must not be negative, got %s", c.UpstreamDialTimeout)
	case c.UpstreamHeaderTimeout < 0:
		return fmt.Errorf("waitroom: Config.UpstreamHeaderTimeout must not be negative, got %s", c.UpstreamHeaderTimeout)
	}
	if err := validateTokenKeys(c.PassTokenKeys, c.BindPasses); err != nil {
		return err
	}
	for i, k := range c.PassKeys {
		if len(k) < 32 {
			return fmt.Errorf("waitroom: Config.PassKeys[%d] must be at least 32 bytes, got %d", i, len(k))
		}
	}
	return nil
}

func validPrefix(s string) bool {
	for i := range len(s) {
		if s[i] == '{' || s[i] == '}' {
			return false
		}
	}
	return true
}

// RoomConfig is a room's settings. They live in Redis, so every instance serving the room sees the
// same ones, and a change (SetRoom) takes effect on every instance at its next admission.
type RoomConfig struct {
	// MaxActive is the most visitors admitted at once. Required, at least 1.
	MaxActive int
	// NewUsersPerMinute, when above 0, also limits how many visitors are admitted per minute
	// (spread evenly, bursts of up to a twelfth of it). Default 0: no limit on the inflow.
	NewUsersPerMinute int
	// SessionTimeout is how long an admitted visitor may stay idle (no request) before its slot is
	// freed. Default 5m.
	SessionTimeout time.Duration
	// QueueTimeout is how long a waiting visitor may go without a status poll before it leaves the
	// line. Default 2m.
	QueueTimeout time.Duration
	// PassTTL is how long a pass is valid after it was issued or last refreshed. Default
	// SessionTimeout; at most SessionTimeout, so a pass never outlives its slot's idle timeout.
	PassTTL time.Duration
	// Upstream is the URL the reverse proxy (deployment a) forwards admitted requests to, at most
	// 2048 bytes. Default none.
	Upstream string
	// OpenAt, when set and in the future, is when the room opens: visitors who arrive before wait
	// on a countdown and are put in random order at the start; later ones queue behind them.
	OpenAt time.Time
	// Template is the room's own waiting page, an html/template with the fields of PageData.
	// Default: the built-in page.
	Template string
	// Language is the waiting page's language, one of Languages ("en", "zh", "ja", "es", "de",
	// "fr"). Default "": chosen by the request's Accept-Language, English when nothing fits. A
	// visitor's own pick on the page's language switch outranks it.
	Language string
	// ArrivalsPerMinute overrides Config.ArrivalsPerMinute (new visitors a client address puts in
	// line per minute) for this room. Default 0: the Client's; -1: no limit.
	ArrivalsPerMinute int
	// ChallengeAbove, when above 0, has a new visitor solve a proof-of-work challenge on the
	// waiting page before it joins a line that is this long or longer (a browser without
	// JavaScript waits ChallengeWait instead). Default 0: never.
	ChallengeAbove int
	// ChallengeBits is the challenge's difficulty: the leading zero bits of a SHA-256 the page
	// must find; each bit doubles the work. Default 16 (a fraction of a second in a browser).
	ChallengeBits int
	// ChallengeWait is how long a browser without JavaScript waits in place of solving the
	// challenge. Default 30s.
	ChallengeWait time.Duration
	// SiteName is shown at the top of the waiting page and in its title (at most 100 characters,
	// no control characters). Default "": none.
	SiteName string
	// LogoURL is the waiting page's logo: an https URL or a path on the site ("/logo.svg"), at most
	// 2048 bytes. Default "": none.
	LogoURL string
	// Bypass lets requests past the room by path, user agent or a staff secret. Default none.
	Bypass BypassRules
	// FailOpen admits visitors when Redis cannot be reached (instead of showing the waiting page).
	// Visitors with a pass get in either way. Default false: fail closed.
	FailOpen bool
}

// invalid says which setting is wrong: a *sluice.FieldError naming the RoomConfig field in the
// snake_case of the HTTP API, matched by errors.Is(err, sluice.ErrInvalid).
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("waitroom: %w", sluice.Invalid(field, format, args...))
}

func (c RoomConfig) withDefaults() RoomConfig {
	c.SessionTimeout = cmp.Or(c.SessionTimeout, 5*time.Minute)
	c.QueueTimeout = cmp.Or(c.QueueTimeout, 2*time.Minute)
	c.PassTTL = cmp.Or(c.PassTTL, c.SessionTimeout)
	c.ChallengeBits = cmp.Or(c.ChallengeBits, 16)
	c.ChallengeWait = cmp.Or(c.ChallengeWait, 30*time.Second)
	return c
}

// maxTimeout bounds the timeouts: a day is far more than any waiting room holds anyone.
const maxTimeout = 24 * time.Hour

func (c RoomConfig) validate() error {
	switch {
	case c.MaxActive < 1 || c.MaxActive > 1_000_000_000:
		return invalid("max_active", "must be between 1 and 1000000000, got %d", c.MaxActive)
	case c.NewUsersPerMinute < 0 || c.NewUsersPerMinute > 1_000_000_000:
		return invalid("new_users_per_minute", "must be between 0 (no limit) and 1000000000, got %d", c.NewUsersPerMinute)
	case c.SessionTimeout < time.Second || c.SessionTimeout > maxTimeout:
		return invalid("session_timeout", "must be between 1s and 24h, got %s", c.SessionTimeout)
	case c.QueueTimeout < time.Second || c.QueueTimeout > maxTimeout:
		return invalid("queue_timeout", "must be between 1s and 24h, got %s", c.QueueTimeout)
	case c.PassTTL < time.Second || c.PassTTL > c.SessionTimeout:
		return invalid("pass_ttl", "must be between 1s and session_timeout (%s), got %s", c.SessionTimeout, c.PassTTL)
	case len(c.Template) > 256<<10:
		return invalid("template", "must be at most 256 KiB, got %d bytes", len(c.Template))
	}
	if err := c.validateEntry(); err != nil {
		return err
	}
	if err := c.validatePage(); err != nil {
		return err
	}
	if err := c.Bypass.validate(); err != nil {
		return err
	}
	if c.Upstream != "" {
		if len(c.Upstream) > maxUpstreamURL {
			return invalid("upstream", "longer than %d bytes", maxUpstreamURL)
		}
		u, err := url.Parse(c.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return invalid("upstream", "must be an absolute http or https URL, got %q", c.Upstream)
		}
	}
	if c.Template != "" {
		if err := checkTemplate(c.Template); err != nil {
			return invalid("template", "%v", err)
		}
	}
	return nil
}

// fields is the settings as the config hash holds them (lua/lib.lua), durations in ms.
func (c RoomConfig) fields() []any {
	openAt := int64(0)
	if !c.OpenAt.IsZero() {
		openAt = c.OpenAt.UnixMilli()
	}
	failOpen := "0"
	if c.FailOpen {
		failOpen = "1"
	}
	return []any{
		"max_active", c.MaxActive,
		"new_users_per_minute", c.NewUsersPerMinute,
		"session_timeout", c.SessionTimeout.Milliseconds(),
		"queue_timeout", c.QueueTimeout.Milliseconds(),
		"pass_ttl", c.PassTTL.Milliseconds(),
		"open_at", openAt,
		"upstream", c.Upstream,
		"template", c.Template,
		"language", c.Language,
		"site_name", c.SiteName,
		"logo_url", c.LogoURL,
		"fail_open", failOpen,
		"arrivals_per_minute", c.ArrivalsPerMinute,
		"challenge_above", c.ChallengeAbove,
		"challenge_bits", c.ChallengeBits,
		"challenge_wait", c.ChallengeWait.Milliseconds(),
		"bypass", c.Bypass.encode(),
	}
}

// parseRoomConfig reads the config hash back; version is 0 when the hash is empty.
func parseRoomConfig(h map[string]string) (cfg RoomConfig, version int64) {
	num := func(k string) int64 { n, _ := strconv.ParseInt(h[k], 10, 64); return n }
	ms := func(k string) time.Duration { return time.Duration(num(k)) * time.Millisecond }
	cfg = RoomConfig{
		MaxActive:         int(num("max_active")),
		NewUsersPerMinute: int(num("new_users_per_minute")),
		SessionTimeout:    ms("session_timeout"),
		QueueTimeout:      ms("queue_timeout"),
		PassTTL:           ms("pass_ttl"),
		Upstream:          h["upstream"],
		Template:          h["template"],
		Language:          h["language"],
		SiteName:          h["site_name"],
		LogoURL:           h["logo_url"],
		FailOpen:          h["fail_open"] == "1",
		ArrivalsPerMinute: int(num("arrivals_per_minute")),
		ChallengeAbove:    int(num("challenge_above")),
		ChallengeBits:     int(num("challenge_bits")),
		ChallengeWait:     ms("challenge_wait"),
		Bypass:            decodeBypass(h["bypass"]),
	}
	if at := num("open_at"); at > 0 {
		cfg.OpenAt = time.UnixMilli(at).UTC()
	}
	// A room written before a setting existed reads as its default.
	return cfg.withDefaults(), num("version")
}

// maxUpstreamURL bounds Config.Upstream: every answer that shows a room's settings carries it.
const maxUpstreamURL = 2048
