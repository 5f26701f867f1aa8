package relay_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

func TestPriorityIsLoweredToCapOrGrant(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{GrantKeys: [][]byte{testKey}})
	setEndpoint(t, c, relay.Endpoint{Name: "g", TargetURL: "https://x.example.com/"})
	future := time.Now().Add(time.Hour)
	cases := []struct {
		name string
		p    relay.SubmitParams
		want int
	}{
		{"no cap", relay.SubmitParams{Priority: 200}, 0},
		{"under cap", relay.SubmitParams{Priority: 3, PriorityCap: 5}, 3},
		{"over cap", relay.SubmitParams{Priority: 200, PriorityCap: 5}, 5},
		{"grant", relay.SubmitParams{Priority: 200, Subject: "vip", Grant: relay.SignGrant(testKey, "vip", 50, future)}, 50},
		{"grant below ask", relay.SubmitParams{Priority: 20, Subject: "vip", Grant: relay.SignGrant(testKey, "vip", 50, future)}, 20},
		{"grant for another subject", relay.SubmitParams{Priority: 200, Subject: "me", Grant: relay.SignGrant(testKey, "vip", 50, future)}, 0},
		{"forged grant", relay.SubmitParams{Priority: 200, Subject: "vip", Grant: relay.SignGrant([]byte(strings.Repeat("f", 32)), "vip", 255, future)}, 0},
		{"expired grant", relay.SubmitParams{Priority: 200, Subject: "vip", PriorityCap: 1, Grant: relay.SignGrant(testKey, "vip", 50, time.Now().Add(-time.Second))}, 1},
		{"tampered grant", relay.SubmitParams{Priority: 200, Subject: "vip", Grant: strings.Replace(relay.SignGrant(testKey, "vip", 5, future), "g1.5.", "g1.255.", 1)}, 0},
	}
	for _, tc := range cases {
		tc.p.Endpoint = "g"
		r := submit(t, c, tc.p)
		if r.Priority != tc.want {
			t.Errorf("%s: priority %d, want %d", tc.name, r.Priority, tc.want)
		}
		if got := get(t, c, r.ID).Priority; got != tc.want {
			t.Errorf("%s: stored priority %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestVerifyGrant(t *testing.T) {
	t.Parallel()
	now := time.Now()
	g := relay.SignGrant(testKey, "alice", 7, now.Add(time.Minute))
	if p, err := relay.VerifyGrant([][]byte{[]byte(strings.Repeat("z", 32)), testKey}, g, "alice", now); err != nil || p != 7 {
		t.Fatalf("VerifyGrant = %d, %v", p, err)
	}
	for _, bad := range []string{"", "g1", "g1.7.x.y", g + "x", "g2" + g[2:]} {
		if _, err := relay.VerifyGrant([][]byte{testKey}, bad, "alice", now); !errors.Is(err, relay.ErrGrantInvalid) {
			t.Errorf("VerifyGrant(%q) = %v", bad, err)
		}
	}
	if _, err := relay.VerifyGrant([][]byte{testKey}, g, "alice", now.Add(2*time.Minute)); !errors.Is(err, relay.ErrGrantInvalid) {
		t.Errorf("expired grant verified")
	}
}
