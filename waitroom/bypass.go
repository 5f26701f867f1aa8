package waitroom

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"path"
	"strings"
)

// BypassRules let requests past a room without a place or a pass: health checks and static
// assets by path, monitors and crawlers by user agent, staff by a secret. A bypassed request
// changes nothing in Redis and is counted (Counters.Bypassed).
type BypassRules struct {
	// Paths are path prefixes ("/static/", "/healthz") or, when they hold '*', '?' or '[',
	// path.Match patterns ("/assets/*.css"; '*' does not cross '/'). At most 100.
	Paths []string `json:"paths,omitempty"`
	// UserAgents are substrings of the User-Agent header, matched without regard to case
	// ("UptimeRobot"). At most 100. A user agent is whatever the client says: name only
	// agents whose requests are harmless to let through.
	UserAgents []string `json:"user_agents,omitempty"`
	// Secret lets staff in: a request carrying it in the Sluice-Room-Bypass header or the
	// sluice_bypass_<room> cookie goes through. Compared in constant time. Empty: none; else
	// 16 to 256 bytes.
	Secret string `json:"secret,omitempty"`
}

// BypassHeader carries a room's bypass secret (BypassRules.Secret).
const BypassHeader = "Sluice-Room-Bypass" //nolint:gosec // G101: a header's name, not a credential

func bypassCookie(room string) string { return "sluice_bypass_" + room }

const maxBypassRules = 100

func (b BypassRules) empty() bool {
	return len(b.Paths) == 0 && len(b.UserAgents) == 0 && b.Secret == ""
}

func (b BypassRules) validate() error {
	if len(b.Paths) > maxBypassRules {
		return invalid("bypass.paths", "must hold at most %d entries, got %d", maxBypassRules, len(b.Paths))
	}
	for _, p := range b.Paths {
		if !strings.HasPrefix(p, "/") || len(p) > 256 {
			return invalid("bypass.paths", "%q must start with / and be at most 256 bytes", p)
		}
		if _, err := path.Match(p, "/"); err != nil {
			return invalid("bypass.paths", "%q is not a valid pattern: %v", p, err)
		}
	}
	if len(b.UserAgents) > maxBypassRules {
		return invalid("bypass.user_agents", "must hold at most %d entries, got %d", maxBypassRules, len(b.UserAgents))
	}
	for _, ua := range b.UserAgents {
		if strings.TrimSpace(ua) == "" || len(ua) > 256 {
			return invalid("bypass.user_agents", "%q must be 1 to 256 bytes and not blank", ua)
		}
	}
	if b.Secret != "" && (len(b.Secret) < 16 || len(b.Secret) > 256) {
		return invalid("bypass.secret", "must be empty or 16 to 256 bytes, got %d bytes", len(b.Secret))
	}
	return nil
}

// encode is the rules as the config hash keeps them: JSON, "" for none.
func (b BypassRules) encode() string {
	if b.empty() {
		return ""
	}
	j, _ := json.Marshal(b) //nolint:gosec // G117: the rules are stored in the room's settings, secret included; the API shows only whether one is set
	return string(j)
}

func decodeBypass(s string) BypassRules {
	var b BypassRules
	if s != "" {
		_ = json.Unmarshal([]byte(s), &b) // written by encode
	}
	return b
}

// matches reports whether r (for the page at target: its own path, or the original one behind
// nginx) is let past room by the rules.
func (b BypassRules) matches(r *http.Request, room, target string) bool {
	if b.Secret != "" && b.secretMatches(r, room) {
		return true
	}
	if len(b.Paths) > 0 {
		p, _, _ := strings.Cut(target, "?")
		for _, rule := range b.Paths {
			if strings.ContainsAny(rule, "*?[") {
				if ok, _ := path.Match(rule, p); ok {
					return true
				}
			} else if strings.HasPrefix(p, rule) {
				return true
			}
		}
	}
	if len(b.UserAgents) > 0 {
		ua := strings.ToLower(r.Header.Get("User-Agent"))
		for _, rule := range b.UserAgents {
			if ua != "" && strings.Contains(ua, strings.ToLower(rule)) {
				return true
			}
		}
	}
	return false
}

// secretMatches compares the secret the request carries with the room's in constant time (of
// their hashes, so not even the length shows).
func (b BypassRules) secretMatches(r *http.Request, room string) bool {
	given := r.Header.Get(BypassHeader)
	if given == "" {
		if ck, err := r.Cookie(bypassCookie(room)); err == nil {
			given = ck.Value
		}
	}
	if given == "" {
		return false
	}
	want, got := sha256.Sum256([]byte(b.Secret)), sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// bypassed reports whether r goes past room by its rules, and counts it. The rules are the
// cached settings (no Redis call once loaded); a room that cannot be loaded bypasses nothing.
func (room *Room) bypassed(r *http.Request, target string) bool {
	st, err := room.cached(r.Context())
	if err != nil {
		return false
	}
	if st.cfg.Bypass.empty() || !st.cfg.Bypass.matches(r, room.name, target) {
		return false
	}
	room.bypassedCount.Add(1)
	return true
}
