package waitroom_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// clientHeader names, in these tests, the client address the room believes (Config.ClientAddr),
// as a server believes a trusted proxy's X-Forwarded-For.
const clientHeader = "X-Test-Client"

func byTestHeader(r *http.Request) string { return r.Header.Get(clientHeader) }

// serveOnce runs one request through h in process and returns its answer.
func serveOnce(h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.Background(), method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// entered sends a new visitor's cookie round trip from addr to the status route of room r and
// returns the second answer (the one that joins the line) and the visitor's cookies.
func entered(t *testing.T, h http.Handler, addr string, extra ...*http.Cookie) (waitroom.StatusJSON, []*http.Cookie) {
	t.Helper()
	hdr := http.Header{clientHeader: {addr}, "Accept": {"application/json"}}
	first := serveOnce(h, "GET", "/v1/rooms/r/status", hdr)
	cookies := append(first.Result().Cookies(), extra...)
	return statusWith(t, h, addr, cookies), cookies
}

// statusWith polls the status route of room r with cookies from addr.
func statusWith(t *testing.T, h http.Handler, addr string, cookies []*http.Cookie) waitroom.StatusJSON {
	t.Helper()
	req := httptest.NewRequestWithContext(context.Background(), "GET", "/v1/rooms/r/status", nil)
	req.Header.Set(clientHeader, addr)
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return statusOf(t, response{rec.Code, rec.Header(), rec.Body.String()})
}

// TestCookielessFloodLeavesTheLineUnchanged sends 10,000 requests without cookies to every
// entry of the room: the proxy's pages and polls, the status route, the waiting page and the
// nginx check. The line and the slots are as they were.
func TestCookielessFloodLeavesTheLineUnchanged(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{ArrivalsPerMinute: -1, PollsPerMinute: 100_000})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	up := newUpstream(t)
	proxy := waitroom.Middleware(room, up.Config.Handler)
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	site := httptest.NewServer(proxy)
	t.Cleanup(site.Close)
	do(t, browser(t), "GET", site.URL+"/", nil)      // holds the slot
	do(t, browser(t), "GET", site.URL+"/", jsonPoll) // waits
	before, err := room.Stats(context.Background())
	if err != nil || before.Active != 1 || before.Waiting != 1 {
		t.Fatalf("before the flood: %+v %v", before, err)
	}
	entries := []struct {
		h      http.Handler
		target string
		header http.Header
	}{
		{proxy, "/products", nil},
		{proxy, "/products", http.Header{waitroom.PollHeader: {"1"}, "Accept": {"application/json"}}},
		{mux, "/v1/rooms/r/status", nil},
		{mux, "/v1/rooms/r/wait?next=/cart", nil},
		{mux, "/v1/rooms/r/check", http.Header{waitroom.NextHeader: {"/cart"}}},
	}
	const flood = 10_000
	sent := 0
	for i := range flood {
		e := entries[i%len(entries)]
		rec := serveOnce(e.h, "GET", e.target, e.header)
		if rec.Code == http.StatusOK && e.h == proxy && !strings.Contains(rec.Body.String(), `"state":"entering"`) {
			t.Fatalf("request %d was answered %d %q", i, rec.Code, rec.Body.String())
		}
		sent++
	}
	after, err := room.Stats(context.Background())
	if err != nil || after.Active != before.Active || after.Waiting != before.Waiting || after.Admitted != before.Admitted {
		t.Fatalf("after %d cookieless requests: %+v (before %+v) %v", sent, after, before, err)
	}
	if up.hits.Load() != 1 {
		t.Fatalf("the upstream saw %d requests, want the holder's 1", up.hits.Load())
	}
}

// TestArrivalLimitPerAddress: one address's burst of new visitors, each with its own cookie, is
// held to the address's limit; another address is not; the addresses of one IPv6 /64 share one
// limit; a room's own setting overrides the client's.
func TestArrivalLimitPerAddress(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	const limit = 10
	c := newClient(t, env, waitroom.Config{ArrivalsPerMinute: limit, ClientAddr: byTestHeader})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)

	burst := func(addr func(i int) string, n int) (joined, limited int, took time.Duration) {
		start := time.Now()
		for i := range n {
			st, _ := entered(t, mux, addr(i))
			switch st.State {
			case "waiting", "admitted":
				joined++
			case "limited":
				limited++
			default:
				t.Fatalf("visitor %d: %+v", i, st)
			}
		}
		return joined, limited, time.Since(start)
	}
	// The limit refills one arrival every 60s/limit: the burst may see one more per 6s it took.
	allowed := func(took time.Duration) int { return limit + int(took/(time.Minute/limit)) }
	joined, limited, took := burst(func(int) string { return "203.0.113.7" }, 50)
	if joined < limit || joined > allowed(took) || joined+limited != 50 {
		t.Fatalf("one address's 50 new visitors: %d joined, %d limited (in %s); want %d", joined, limited, took, limit)
	}
	if got := waitingCount(t, room); got != joined-1 {
		t.Fatalf("line %d, want %d (one admitted)", got, joined-1)
	}
	// A visitor already in line is not counted again: its polls go on.
	st, cookies := entered(t, mux, "198.51.100.1")
	for range 3 {
		if again := statusWith(t, mux, "198.51.100.1", cookies); again.State != "waiting" || again.Position != st.Position {
			t.Fatalf("a visitor in line polling: %+v then %+v", st, again)
		}
	}
	// Another address has its own limit.
	if joined, _, _ := burst(func(int) string { return "198.51.100.2" }, 3); joined != 3 {
		t.Fatalf("another address: %d joined, want 3", joined)
	}
	// One IPv6 /64 is one client, whatever the address in it.
	joined, _, took = burst(func(i int) string { return fmt.Sprintf("2001:db8:1:2::%x", i+1) }, 30)
	if joined < limit || joined > allowed(took) {
		t.Fatalf("30 addresses of one /64: %d joined (in %s), want %d", joined, took, limit)
	}
	// The room's setting overrides the client's: -1 is no limit.
	if _, err := c.SetRoom(context.Background(), "r", waitroom.RoomConfig{MaxActive: 1, ArrivalsPerMinute: -1}); err != nil {
		t.Fatal(err)
	}
	if joined, _, _ := burst(func(int) string { return "203.0.113.7" }, 20); joined != 20 {
		t.Fatalf("no limit in the room: %d of 20 joined", joined)
	}
	if got := room.Counters().ArrivalsLimited; got < 40 {
		t.Fatalf("counters say %d arrivals limited", got)
	}
}

// solve finds the nonce of a challenge as the page's script does.
func solve(ch *waitroom.ChallengeJSON) string {
	for n := 0; ; n++ {
		if nonce := strconv.Itoa(n); solvesAt(ch, nonce) {
			return nonce
		}
	}
}

func proofCookie(ch *waitroom.ChallengeJSON, nonce string) *http.Cookie {
	v := ch.Token
	if nonce != "" {
		v += "~" + nonce
	}
	return &http.Cookie{Name: ch.Cookie, Value: v}
}

// withCookie returns cookies with c in place of the one of its name.
func withCookie(cookies []*http.Cookie, c *http.Cookie) []*http.Cookie {
	out := []*http.Cookie{c}
	for _, ck := range cookies {
		if ck.Name != c.Name {
			out = append(out, ck)
		}
	}
	return out
}

// TestChallengeForgedReplayedAndSlow: a long line asks new visitors for a proof of work. A
// solved challenge joins once; a wrong nonce, another visitor's proof, a forged difficulty or the
// same proof a second time are refused; the bare challenge (no JavaScript) joins only after its
// wait.
func TestChallengeForgedReplayedAndSlow(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{ArrivalsPerMinute: -1, PollsPerMinute: 100_000})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, ChallengeAbove: 1, ChallengeBits: 8, ChallengeWait: time.Second})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	const addr = "192.0.2.1"
	if st, _ := entered(t, mux, addr); st.State != "admitted" {
		t.Fatalf("first visitor: %+v", st)
	}
	if st, _ := entered(t, mux, addr); st.State != "waiting" || st.Challenge != nil {
		t.Fatalf("second visitor (empty line, no challenge): %+v", st)
	}
	// The line is 1 long: a newcomer is challenged and stays out.
	st, cookies := entered(t, mux, addr)
	if st.State != "challenge" || st.Challenge == nil || st.Challenge.Bits != 8 || st.Challenge.Cookie != "sluice_proof_r" {
		t.Fatalf("newcomer at a long line: %+v", st)
	}
	ch := st.Challenge
	nonce := solve(ch)
	wrong := nonce
	for solvesAt(ch, wrong) {
		n, _ := strconv.Atoi(wrong)
		wrong = strconv.Itoa(n + 1)
	}
	forgedBits := strings.Replace(ch.Token, ".8.", ".1.", 1)
	other, otherCookies := entered(t, mux, addr)
	for name, proof := range map[string]*http.Cookie{
		"a wrong nonce":          proofCookie(ch, wrong),
		"a forged difficulty":    {Name: ch.Cookie, Value: forgedBits + "~0"},
		"another visitor's work": proofCookie(other.Challenge, solve(other.Challenge)),
		"garbage":                {Name: ch.Cookie, Value: "c1.x.y~1"},
	} {
		if got := statusWith(t, mux, addr, withCookie(cookies, proof)); got.State != "challenge" {
			t.Fatalf("%s: %+v", name, got)
		}
	}
	if got := waitingCount(t, room); got != 1 {
		t.Fatalf("line %d after refused proofs, want 1", got)
	}
	solved := withCookie(cookies, proofCookie(ch, nonce))
	if got := statusWith(t, mux, addr, solved); got.State != "waiting" || got.Position != 2 {
		t.Fatalf("a solved challenge: %+v", got)
	}
	// Replayed: the visitor leaves the line and brings the same proof again.
	req := httptest.NewRequestWithContext(context.Background(), "POST", "/v1/rooms/r/release", nil)
	for _, ck := range solved {
		req.AddCookie(ck)
	}
	mux.ServeHTTP(httptest.NewRecorder(), req)
	if got := waitingCount(t, room); got != 1 {
		t.Fatalf("line %d after the release, want 1", got)
	}
	if got := statusWith(t, mux, addr, solved); got.State != "challenge" {
		t.Fatalf("a replayed proof: %+v", got)
	}
	// Without JavaScript: the bare challenge (as the server set it) is good once its wait is over.
	bare := withCookie(otherCookies, proofCookie(other.Challenge, ""))
	testwait.UntilNil(t, 30*time.Second, func() error {
		if got := statusWith(t, mux, addr, bare); got.State != "waiting" {
			return fmt.Errorf("bare challenge: %+v", got)
		}
		return nil
	})
	if got := waitingCount(t, room); got != 2 {
		t.Fatalf("line %d, want 2", got)
	}
}

func solvesAt(ch *waitroom.ChallengeJSON, nonce string) bool {
	sum := sha256.Sum256([]byte(ch.Token + "~" + nonce))
	zeros := 0
	for _, b := range sum {
		zeros += bits.LeadingZeros8(b)
		if b != 0 {
			break
		}
	}
	return zeros >= ch.Bits
}

// TestChallengeSolvedByChromium: the waiting page's script solves the challenge of a long line
// (at the default difficulty) and the visitor joins it.
func TestChallengeSolvedByChromium(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{ArrivalsPerMinute: -1, PollsPerMinute: 100_000})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, ChallengeAbove: 1, ChallengeWait: 10 * time.Minute})
	_, site := middlewareSite(t, room)
	do(t, browser(t), "GET", site.URL+"/", nil)      // holds the slot
	do(t, browser(t), "GET", site.URL+"/", jsonPoll) // the line is 1 long

	b := browsertest.New(t)
	b.Navigate(site.URL + "/sale")
	b.WaitUntil(60*time.Second, func() error {
		if got := b.Text("#position"); got != "2" {
			return fmt.Errorf("position shows %q", got)
		}
		return nil
	})
	if got := waitingCount(t, room); got != 2 {
		t.Fatalf("line %d, want 2", got)
	}
	if got := room.Counters().Challenged; got == 0 {
		t.Fatal("nobody was challenged")
	}
}

// TestEntrySettingsRefused: bad entry settings name their field and change nothing.
func TestEntrySettingsRefused(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	newRoom(t, c, waitroom.RoomConfig{MaxActive: 3})
	for field, cfg := range map[string]waitroom.RoomConfig{
		"arrivals_per_minute": {MaxActive: 1, ArrivalsPerMinute: -2},
		"challenge_above":     {MaxActive: 1, ChallengeAbove: -1},
		"challenge_bits":      {MaxActive: 1, ChallengeBits: 29},
		"challenge_wait":      {MaxActive: 1, ChallengeWait: time.Millisecond},
	} {
		_, err := c.SetRoom(context.Background(), "r", cfg)
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Fatalf("%s: %v", field, err)
		}
	}
	if got, err := c.GetRoom(context.Background(), "r"); err != nil || got.MaxActive != 3 || got.ChallengeBits != 16 {
		t.Fatalf("settings after refused changes: %+v %v", got, err)
	}
	if _, err := waitroom.NewClient(env.Client, waitroom.Config{PassKeys: [][]byte{testKey()}, ArrivalsPerMinute: 10_001}); err == nil {
		t.Fatal("Config.ArrivalsPerMinute 10001 accepted")
	}
}
