package waitroom

import (
	"crypto/rand"
	"crypto/sha256"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The proof-of-work challenge (RoomConfig.ChallengeAbove). When the line is long, a new visitor
// joins it only with a proof: the server hands it a challenge, a token signed like a pass and
// bound to the room, the visitor and an expiry, with a difficulty and a time from which it is
// good without work:
//
//	"c1.<b64 visitor>.<expires ms>.<not before ms>.<bits>.<salt>.<mac>"
//	mac = HMAC(key, "sluice-challenge" \x00 room \x00 visitor \x00 expires \x00 not before \x00 bits \x00 salt)
//
// The waiting page's script finds a nonce such that SHA-256(token "~" nonce) starts with bits
// zero bits and puts "token~nonce" in the room's proof cookie; a browser without JavaScript
// holds the bare token (set by the server) and its page refreshes once the token's not-before
// time has come (RoomConfig.ChallengeWait): it still enters, more slowly. The cookie carries the
// proof in every deployment, the nginx check included. Each token is good for one entry: the
// admission script keeps the ids (macs) of the tokens used until they expire and refuses a
// second use.

const purposeChallenge = "sluice-challenge"

// maxChallengeBits bounds the difficulty (2^28 hashes is already minutes in a browser).
const maxChallengeBits = 28

// challengeTTL is how long a challenge stays good after its not-before time.
const challengeTTL = 5 * time.Minute

func proofCookie(room string) string { return "sluice_proof_" + room }

// challengeToken is what a valid challenge token says.
type challengeToken struct {
	token     string
	id        string // its mac: unique (the salt), the key of its single use
	expires   time.Time
	notBefore time.Time
	bits      int
}

func (s signer) signChallenge(room, visitor string, expires, notBefore time.Time, difficulty int) string {
	var salt [9]byte
	_, _ = rand.Read(salt[:])
	parts := []string{
		b64.EncodeToString([]byte(visitor)), strconv.FormatInt(expires.UnixMilli(), 10),
		strconv.FormatInt(notBefore.UnixMilli(), 10), strconv.Itoa(difficulty), b64.EncodeToString(salt[:]),
	}
	mac := s.mac(0, purposeChallenge, room, visitor, parts[1], parts[2], parts[3], parts[4])
	return "c1." + strings.Join(parts, ".") + "." + b64.EncodeToString(mac)
}

// checkChallenge returns what token says when it is a challenge of room and visitor, signed with
// one of the keys and not expired at now.
func (s signer) checkChallenge(room, visitor, token string, now time.Time) (challengeToken, bool) {
	p := strings.Split(token, ".")
	if len(p) != 7 || p[0] != "c1" || p[1] != b64.EncodeToString([]byte(visitor)) {
		return challengeToken{}, false
	}
	exp, err1 := strconv.ParseInt(p[2], 10, 64)
	nb, err2 := strconv.ParseInt(p[3], 10, 64)
	difficulty, err3 := strconv.Atoi(p[4])
	if err1 != nil || err2 != nil || err3 != nil || exp <= now.UnixMilli() || difficulty < 1 || difficulty > maxChallengeBits {
		return challengeToken{}, false
	}
	if !s.verify(p[6], purposeChallenge, room, visitor, p[2], p[3], p[4], p[5]) {
		return challengeToken{}, false
	}
	return challengeToken{token: token, id: p[6], expires: time.UnixMilli(exp), notBefore: time.UnixMilli(nb), bits: difficulty}, true
}

// solves reports whether nonce solves the challenge token at difficulty: SHA-256(token "~"
// nonce) starts with difficulty zero bits.
func solves(token, nonce string, difficulty int) bool {
	if nonce == "" || len(nonce) > 20 {
		return false
	}
	for i := range len(nonce) {
		if nonce[i] < '0' || nonce[i] > '9' {
			return false
		}
	}
	sum := sha256.Sum256([]byte(token + "~" + nonce))
	zeros := 0
	for _, b := range sum {
		if b != 0 {
			zeros += bits.LeadingZeros8(b)
			break
		}
		zeros += 8
	}
	return zeros >= difficulty
}

// requestProof reads the room's proof cookie: proof is a challenge the request proves (solved,
// or bare and past its not-before time), pending a valid challenge of the visitor not yet proven
// (the one to keep showing, so a refresh does not restart the wait).
func (c *Client) requestProof(r *http.Request, room, visitor string, now time.Time) (proof, pending challengeToken) {
	v, ok := cookieValue(r, proofCookie(room))
	if !ok {
		return proof, pending
	}
	token, nonce, solved := strings.Cut(v, "~")
	ch, ok := c.signer.checkChallenge(room, visitor, token, now)
	switch {
	case !ok:
	case solved && solves(token, nonce, ch.bits), !solved && !now.Before(ch.notBefore):
		proof = ch
	case !solved:
		pending = ch
	}
	return proof, pending
}

// challenge puts a challenge in st (and in the proof cookie, for a browser without JavaScript to
// send back after the wait): the pending one the request carried, else a new one.
func (c *Client) challenge(w http.ResponseWriter, r *http.Request, room *Room, st *Status, pending challengeToken, now time.Time) {
	ch := pending
	if ch.token == "" {
		cfg := RoomConfig{}.withDefaults()
		if cur := room.state.Load(); cur != nil {
			cfg = cur.cfg
		}
		ch.notBefore = now.Add(cfg.ChallengeWait)
		ch.expires = ch.notBefore.Add(challengeTTL)
		ch.bits = cfg.ChallengeBits
		ch.token = c.signer.signChallenge(room.name, st.Visitor, ch.expires, ch.notBefore, ch.bits)
		http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: the page's script replaces it with its proof (so not HttpOnly); Secure follows the request
			Name: proofCookie(room.name), Value: ch.token, Path: "/", Expires: ch.expires,
			MaxAge: int(ch.expires.Sub(now) / time.Second), Secure: c.secure(r), SameSite: http.SameSiteLaxMode,
		})
	}
	st.Challenge, st.ChallengeBits = ch.token, ch.bits
	st.RetryAfter = max(ch.notBefore.Sub(now), 0) + time.Second
}
