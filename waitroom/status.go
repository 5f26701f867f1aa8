package waitroom

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"
)

// StatusJSON is the JSON form of a Status (GET /v1/rooms/{room}/status, and the middleware's
// answer to a poll or an Accept: application/json request while waiting).
type StatusJSON struct {
	Room      string `json:"room"`
	State     string `json:"state"`
	Position  int    `json:"position"`
	Length    int    `json:"length"`
	Active    int    `json:"active"`
	MaxActive int    `json:"max_active"`
	// ETASeconds is null while the ETA is unknown.
	ETASeconds     *int64  `json:"eta_seconds"`
	WaitedSeconds  int64   `json:"waited_seconds"`
	OpensInSeconds int64   `json:"opens_in_seconds"`
	Progress       float64 `json:"progress"`
	// PollAfterMs is when to ask again.
	PollAfterMs int64 `json:"poll_after_ms"`
	// PassExpiresAt is when the pass set with this answer expires (admitted visitors only).
	PassExpiresAt *time.Time `json:"pass_expires_at,omitempty"`
	// Challenge is the proof of work to bring before the visitor joins the line (state
	// "challenge").
	Challenge *ChallengeJSON `json:"challenge,omitempty"`
}

// ChallengeJSON is a proof-of-work challenge: find a decimal nonce such that SHA-256(token "~"
// nonce) starts with bits zero bits, and send "token~nonce" in the cookie named cookie. Without a
// solution the bare token (already in that cookie) is good from wait_seconds on.
type ChallengeJSON struct {
	Token       string `json:"token"`
	Bits        int    `json:"bits"`
	Cookie      string `json:"cookie"`
	WaitSeconds int64  `json:"wait_seconds"`
}

func (c *Client) statusJSON(st Status) StatusJSON {
	j := StatusJSON{
		Room: st.Room, State: st.State.String(), Position: st.Position, Length: st.Length,
		Active: st.Active, MaxActive: st.MaxActive,
		WaitedSeconds:  int64(st.Waited / time.Second),
		OpensInSeconds: int64(math.Ceil(st.OpensIn.Seconds())),
		Progress:       math.Round(st.Progress()*1000) / 1000,
		PollAfterMs:    c.cfg.PollInterval.Milliseconds(),
	}
	if st.ETAKnown {
		s := int64(st.ETA / time.Second)
		j.ETASeconds = &s
	}
	if st.Pass != "" {
		exp := st.PassExpires.UTC().Truncate(time.Second)
		j.PassExpiresAt = &exp
	}
	if st.State == Limited {
		j.PollAfterMs = max(j.PollAfterMs, st.RetryAfter.Milliseconds())
	}
	if st.Challenge != "" {
		j.Challenge = &ChallengeJSON{Token: st.Challenge, Bits: st.ChallengeBits, Cookie: proofCookie(st.Room),
			WaitSeconds: int64(math.Ceil(st.RetryAfter.Seconds()))}
	}
	return j
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// retryAfter sets Retry-After in whole seconds, at least 1.
func retryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10))
}
