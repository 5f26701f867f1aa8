package waitroom_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// An arrive and a release whose replies are lost reach Redis twice (go-redis sends them again)
// and act once: the repeated arrive finds the visitor admitted and answers so (keyed by the
// visitor: one slot taken, one admission counted), and the repeated release answers what the first
// did (its call id: the visitor held a slot, not "held nothing"), having freed one slot, so the
// next visitor in line gets exactly that slot.
func TestRepeatedArriveAndReleaseActOnce(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, proxy := flakyproxy.NewClient(t, env)
	cfg := waitroom.Config{Prefix: env.Prefix, PassKeys: [][]byte{testKey()}}
	flakyClient, err := waitroom.NewClient(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRoom(t, newClient(t, env, waitroom.Config{}), waitroom.RoomConfig{MaxActive: 1})
	flaky, err := flakyClient.Room("r")
	if err != nil {
		t.Fatal(err)
	}

	rule := proxy.DropReplies(flakyproxy.FunctionCall("arrive"), 1)
	st, err := flaky.Arrive(t.Context(), "a")
	if err != nil || st.State != waitroom.Admitted || st.Active != 1 || rule.Dropped() != 1 {
		t.Fatalf("arrive, reply lost: %+v, %v (%d dropped); want admitted, one active", st, err, rule.Dropped())
	}
	if st := arrive(t, r, "b"); st.State != waitroom.Waiting || st.Position != 1 || st.Active != 1 {
		t.Fatalf("the next visitor: %+v; want waiting first in line behind one active", st)
	}

	rule = proxy.DropReplies(flakyproxy.FunctionCall("release"), 1)
	if held, err := flaky.Release(t.Context(), "a"); err != nil || !held || rule.Dropped() != 1 {
		t.Fatalf("release, reply lost: held %v, %v (%d dropped); want held (the slot was freed)", held, err, rule.Dropped())
	}
	if st := arrive(t, r, "b"); st.State != waitroom.Admitted || st.Active != 1 {
		t.Fatalf("the next visitor after the release: %+v; want admitted, one active", st)
	}
	if st := arrive(t, r, "c"); st.State != waitroom.Waiting || st.Active != 1 {
		t.Fatalf("a third visitor: %+v; want waiting (the release freed one slot, once)", st)
	}
	stats, err := r.Stats(t.Context())
	if err != nil || stats.Admitted != 2 || stats.Released != 1 {
		t.Fatalf("room stats: admitted %d, released %d, %v; want 2 and 1", stats.Admitted, stats.Released, err)
	}
}

// A status poll whose reply is lost reaches Redis twice and is charged to its visitor's poll
// limit once: the poll limit and the arrival are one script call, which keeps the id of the poll
// it charged last. With a burst of one poll, a second charge would refuse the very poll that took
// the visitor's budget (a 429 to its first poll).
func TestRepeatedPollIsChargedOnce(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, proxy := flakyproxy.NewClient(t, env)
	c, err := waitroom.NewClient(rdb, waitroom.Config{Prefix: env.Prefix, PassKeys: [][]byte{testKey()}, PollsPerMinute: 3})
	if err != nil {
		t.Fatal(err)
	}
	newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	status := srv.URL + "/v1/rooms/r/status"

	if r := do(t, browser(t), "GET", status, nil); r.code != http.StatusOK || statusOf(t, r).State != "admitted" {
		t.Fatalf("first visitor: %d %q; want admitted", r.code, r.body)
	}
	v := browser(t)
	if r := doOnce(t, v, "GET", status, nil); statusOf(t, r).State != "entering" {
		t.Fatalf("the cookie round trip: %d %q; want entering", r.code, r.body)
	}
	rule := proxy.DropReplies(flakyproxy.FunctionCall("arrive"), 1)
	r := doOnce(t, v, "GET", status, nil)
	if r.code != http.StatusOK || statusOf(t, r).State != "waiting" || rule.Dropped() != 1 {
		t.Fatalf("a poll whose reply was lost: %d %q (%d dropped); want 200 waiting", r.code, r.body, rule.Dropped())
	}
	if r := doOnce(t, v, "GET", status, nil); r.code != http.StatusTooManyRequests {
		t.Fatalf("the next poll at once: %d %q; want 429 (the budget of one poll is spent)", r.code, r.body)
	}
}
