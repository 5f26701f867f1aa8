package waitroom_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// TestNginxChallenge runs the proof-of-work challenge in deployment c: behind nginx's
// auth_request, a newcomer at a long line is challenged and stays out of it; a wrong nonce is
// refused; the solved challenge, as the page's script sets it, joins the line behind the others.
func TestNginxChallenge(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{ArrivalsPerMinute: -1})
	site := nginxSite(t, c, waitroom.RoomConfig{MaxActive: 1, ChallengeAbove: 1, ChallengeBits: 8})
	status := site + "/v1/rooms/shop/status"

	alice, bob, carol := browser(t), browser(t), browser(t)
	do(t, alice, "GET", site+"/products", nil)
	do(t, bob, "GET", site+"/products", nil)
	if s := statusOf(t, do(t, bob, "GET", status, jsonPoll)); s.State != "waiting" || s.Position != 1 {
		t.Fatalf("bob, at an empty line: %+v", s)
	}
	do(t, carol, "GET", site+"/products", nil)
	s := statusOf(t, do(t, carol, "GET", status, jsonPoll))
	if s.State != "challenge" || s.Challenge == nil || s.Challenge.Bits != 8 {
		t.Fatalf("carol, at a line of 1: %+v", s)
	}
	siteURL, _ := url.Parse(site)
	ch := s.Challenge
	wrong := "0"
	for solvesAt(ch, wrong) {
		wrong += "0"
	}
	carol.Jar.SetCookies(siteURL, []*http.Cookie{proofCookie(ch, wrong)})
	if s := statusOf(t, do(t, carol, "GET", status, jsonPoll)); s.State != "challenge" {
		t.Fatalf("carol with a wrong nonce: %+v", s)
	}
	carol.Jar.SetCookies(siteURL, []*http.Cookie{proofCookie(ch, solve(ch))})
	if s := statusOf(t, do(t, carol, "GET", status, jsonPoll)); s.State != "waiting" || s.Position != 2 {
		t.Fatalf("carol with the solved challenge: %+v", s)
	}
}
