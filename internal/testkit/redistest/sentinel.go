package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the sentinels of StartSentinel monitor.
const SentinelMaster = "sluice"

// SentinelDownAfter is how long the sentinels wait before they call a silent primary down. It is
// small so a failover test takes seconds, and large enough that a loaded machine does not fail
// over by mistake.
const SentinelDownAfter = 800 * time.Millisecond

// Sentinel is a primary, one replica and three sentinels (quorum 2) of one test, for tests that
// kill the primary under the code they test. Everything is killed when the test ends.
type Sentinel struct {
	t testing.TB

	mu        sync.Mutex
	servers   []*process // primary and replica, in start order
	sentinels []*process
}

// StartSentinel starts a primary, a replica of it and three sentinels that monitor it, and waits
// until the replica is in sync and every sentinel knows the replica and the other two sentinels
// (so a failover can be authorised the moment the primary dies). It fails the test, never skips,
// when redis-server is missing.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	s := &Sentinel{t: t}
	t.Cleanup(s.stop)
	start := func(sentinel bool, extra ...string) *process {
		t.Helper()
		p, err := startServer(sentinel, extra...)
		if err != nil {
			t.Fatalf("redistest: sentinel setup: %v", err)
		}
		return p
	}
	primary := start(false)
	s.servers = append(s.servers, primary)
	replica := start(false, "replicaof 127.0.0.1 "+strconv.Itoa(primary.Port))
	s.servers = append(s.servers, replica)
	for range 3 {
		s.sentinels = append(s.sentinels, start(true,
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2", SentinelMaster, primary.Port),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, SentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s 10000", SentinelMaster),
			fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
		))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.waitSettled(ctx, replica.Addr()); err != nil {
		t.Fatalf("redistest: sentinel setup: %v", err)
	}
	return s
}

// URL is the redis+sentinel:// URL of the set, naming all three sentinels.
func (s *Sentinel) URL() string {
	addrs := make([]string, len(s.sentinels))
	for i, p := range s.sentinels {
		addrs[i] = p.Addr()
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// Primary asks the first sentinel that answers for the current primary's address.
func (s *Sentinel) Primary(ctx context.Context) (string, error) {
	var lastErr error
	for _, p := range s.sentinels {
		addr, err := primaryOf(ctx, p)
		if err == nil {
			return addr, nil
		}
		lastErr = err
	}
	return "", fmt.Errorf("no sentinel named the primary: %w", lastErr)
}

// primaryOf asks the sentinel p for the primary's address.
func primaryOf(ctx context.Context, p *process) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: p.Addr()})
	defer c.Close()
	addr, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err == nil && len(addr) != 2 {
		err = fmt.Errorf("unexpected reply %q", addr)
	}
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", p.Addr(), err)
	}
	return net.JoinHostPort(addr[0], addr[1]), nil
}

// KillPrimary SIGKILLs the current primary (no shutdown, no last write to disk) and returns its
// address.
func (s *Sentinel) KillPrimary(ctx context.Context) (string, error) {
	addr, err := s.Primary(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.servers {
		if p.Addr() == addr {
			p.Kill()
			return addr, nil
		}
	}
	return "", fmt.Errorf("the primary %s is not a server of this set", addr)
}

// WaitFailover waits until every sentinel names a primary other than old.
func (s *Sentinel) WaitFailover(ctx context.Context, old string) (string, error) {
	for {
		now, err := s.agreedPrimary(ctx)
		if err == nil && now != old {
			return now, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no failover away from %s: %w (last: %q, %w)", old, ctx.Err(), now, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// agreedPrimary returns the primary every sentinel names, or an error when they differ.
func (s *Sentinel) agreedPrimary(ctx context.Context) (string, error) {
	var seen string
	for _, p := range s.sentinels {
		a, err := primaryOf(ctx, p)
		if err != nil {
			return "", err
		}
		if seen != "" && a != seen {
			return "", errors.New("sentinels disagree")
		}
		seen = a
	}
	return seen, nil
}

// waitSettled waits until the replica's link is up and every sentinel sees one replica and two
// other sentinels.
func (s *Sentinel) waitSettled(ctx context.Context, replica string) error {
	rc := redis.NewClient(&redis.Options{Addr: replica})
	defer rc.Close()
	var last string
	for {
		last = s.settled(ctx, rc)
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not settled: %s", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// settled returns what is not ready yet, or "".
func (s *Sentinel) settled(ctx context.Context, replica *redis.Client) string {
	info, err := replica.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "master_link_status:up") {
		return fmt.Sprintf("replica link not up (%v)", err)
	}
	for _, p := range s.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: p.Addr()})
		m, err := c.Master(ctx, SentinelMaster).Result()
		_ = c.Close()
		if err != nil {
			return fmt.Sprintf("sentinel %s: %v", p.Addr(), err)
		}
		if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
			return fmt.Sprintf("sentinel %s sees %s replicas and %s other sentinels", p.Addr(), m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return ""
}

func (s *Sentinel) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range append(s.sentinels, s.servers...) {
		p.stop()
	}
}
