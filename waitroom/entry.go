package waitroom

import (
	"net/http"
	"net/netip"
	"time"
)

// Entry into a line is what a flood would fill, so it is guarded three ways, in every deployment
// (Proxy, Middleware, the Handler behind nginx):
//
//   - A cookie round trip: a request without a valid visitor cookie gets one (and the waiting
//     page, state "entering") but puts nobody in line and costs no Redis call; the visitor's next
//     request (the page's first poll, or its refresh without JavaScript) carries the cookie and
//     enters. A flood that does not keep cookies never reaches the line.
//   - An arrival limit per client address (Config.ArrivalsPerMinute, RoomConfig.ArrivalsPerMinute):
//     a flood that keeps cookies mints one visitor a request; the line takes only so many new
//     visitors a minute from one address, counted in the admission script itself.
//   - A proof-of-work challenge when the line is long (RoomConfig.ChallengeAbove, challenge.go).

// maxArrivalsPerMinute bounds the per-address limit (the script's GCRA works in whole ms).
const maxArrivalsPerMinute = 10_000

// limitAddr is the address a client is counted under: an IPv4 address as it is, an IPv6 one by
// its /64 (one subscriber's network: a client that owns a /64 must not count as 2^64 clients).
// "" when addr is not an IP address (no limit can be kept for it).
func limitAddr(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// entry is what the admission script needs to guard a new visitor's entry.
type entry struct {
	addr         string    // limitAddr of the client; "" for none (no per-address limit)
	proofID      string    // the id of a valid proof of work the request carries; "" for none
	proofExpires time.Time // when that proof's challenge expires
	binding      string    // the binding of the pass an admission issues (Client.passBinding)
	poll         bool      // the visitor's poll limit applies (Config.PollsPerMinute)
}

func (c RoomConfig) validateEntry() error {
	switch {
	case c.ArrivalsPerMinute < -1 || c.ArrivalsPerMinute > maxArrivalsPerMinute:
		return invalid("arrivals_per_minute", "must be -1 (no limit), 0 (the server's) or up to %d, got %d",
			maxArrivalsPerMinute, c.ArrivalsPerMinute)
	case c.ChallengeAbove < 0 || c.ChallengeAbove > 1_000_000_000:
		return invalid("challenge_above", "must be between 0 (never) and 1000000000, got %d", c.ChallengeAbove)
	case c.ChallengeBits < 1 || c.ChallengeBits > maxChallengeBits:
		return invalid("challenge_bits", "must be between 1 and %d, got %d", maxChallengeBits, c.ChallengeBits)
	case c.ChallengeWait < time.Second || c.ChallengeWait > 10*time.Minute:
		return invalid("challenge_wait", "must be between 1s and 10m, got %s", c.ChallengeWait)
	}
	return nil
}

// admission decides a request that holds no pass: a request without a visitor cookie gets one
// and state Entering (nothing else happens); a known visitor arrives in one script call that
// holds it to its poll limit (pollLimited: the caller answers as for too many polls), then to its
// address's limit and, when the line is long, a proof of work (Challenged: a challenge is set on
// w for the page to solve).
func (c *Client) admission(w http.ResponseWriter, r *http.Request, room *Room) (st Status, pollLimited bool, err error) {
	visitor := c.knownVisitor(r)
	if visitor == "" {
		c.newVisitor(w, r)
		st = Status{Room: room.name, State: Entering}
		admissionEvent(r.Context(), st)
		return st, false, nil
	}
	now := time.Now()
	proof, pending := c.requestProof(r, room.name, visitor, now)
	st, err = room.arrive(r.Context(), visitor, entry{
		addr: limitAddr(c.cfg.ClientAddr(r)), proofID: proof.id, proofExpires: proof.expires,
		binding: c.passBinding(r), poll: true,
	})
	if err == nil && st.State == Challenged {
		c.challenge(w, r, room, &st, pending, now)
	}
	return st, st.pollLimited, err
}

// statusCode is the HTTP status of a page or status answer that admits nobody: 429 for a
// limited arrival, 503 for an unavailable room, else ok.
func statusCode(st Status, ok int) int {
	switch st.State {
	case Limited:
		return http.StatusTooManyRequests
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return ok
}
