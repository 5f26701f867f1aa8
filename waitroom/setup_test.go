package waitroom_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/sluicehq/sluice/internal/benchkit/splitload"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

func TestMain(m *testing.M) {
	splitload.MaybeClient() // the load client of a split benchmark (bench_split_test.go) exits here
	redistest.Main(m)
}

// testKey returns a fresh 32-byte pass key.
func testKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// newClient returns a waitroom client on env with the test's prefix and the given keys (one fresh
// key when none).
func newClient(t testing.TB, env *redistest.Env, cfg waitroom.Config) *waitroom.Client {
	t.Helper()
	cfg.Prefix = env.Prefix
	if len(cfg.PassKeys) == 0 {
		cfg.PassKeys = [][]byte{testKey()}
	}
	c, err := waitroom.NewClient(env.Client, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// newRoom creates the room "r" with cfg and returns its handle.
func newRoom(t *testing.T, c *waitroom.Client, cfg waitroom.RoomConfig) *waitroom.Room {
	t.Helper()
	if _, err := c.SetRoom(context.Background(), "r", cfg); err != nil {
		t.Fatalf("SetRoom: %v", err)
	}
	r, err := c.Room("r")
	if err != nil {
		t.Fatalf("Room: %v", err)
	}
	return r
}

// arrive calls Arrive and fails the test on an error.
func arrive(t *testing.T, r *waitroom.Room, visitor string) waitroom.Status {
	t.Helper()
	st, err := r.Arrive(context.Background(), visitor)
	if err != nil {
		t.Fatalf("Arrive(%s): %v", visitor, err)
	}
	return st
}

// release calls Release and fails the test on an error.
func release(t *testing.T, r *waitroom.Room, visitor string) {
	t.Helper()
	if _, err := r.Release(context.Background(), visitor); err != nil {
		t.Fatalf("Release(%s): %v", visitor, err)
	}
}

func visitorName(i int) string { return fmt.Sprintf("visitor-%05d", i) }

var errNotYet = errors.New("not yet")

type urlT = url.URL

type httpClient = http.Client

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }
