package redistest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/redisx"
)

// Env is what a test gets: a client of its own and a key prefix no other test uses.
type Env struct {
	// Client talks to the shared test server (or cluster). It is closed when the test ends.
	Client redis.UniversalClient
	// Prefix is unique to the test; every key the test writes must start with it. The keys are
	// removed when the test ends.
	Prefix string
	// URL is the redisx URL of the server, for code under test that dials by itself.
	URL string
	// Cluster says whether Client talks to a Redis Cluster.
	Cluster bool
}

var (
	standalone = lazyServer{urlEnv: "SLUICE_TEST_REDIS_URL", start: startStandalone}
	cluster    = lazyServer{urlEnv: "SLUICE_TEST_REDIS_CLUSTER_URL", start: startCluster}
	prefixSeq  atomic.Uint64
)

// lazyServer is a server the tests of a binary share: the one urlEnv names, or else one started
// the first time a test asks for it.
type lazyServer struct {
	urlEnv string
	start  func() (url string, stop func(), err error)

	once sync.Once
	url  string
	stop func()
	err  error
}

// get returns the server's URL. It fails the test (never skips) when no server can be had.
func (l *lazyServer) get(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(l.urlEnv); url != "" {
		return url
	}
	l.once.Do(func() { l.url, l.stop, l.err = l.start() })
	if l.err != nil {
		t.Fatalf("redistest: %v", l.err)
	}
	return l.url
}

func (l *lazyServer) shutdown() {
	if l.stop != nil {
		l.stop()
	}
}

// Main runs the tests of a package, stops the servers they started and fails the run when a
// test leaked a goroutine. Call it from TestMain. The stops run after the tests and before the
// leak check; other harnesses pass theirs (mysqltest.Stop) so their shared pools and server
// processes are gone by then.
func Main(m *testing.M, stops ...func()) {
	stops = append(stops, standalone.shutdown, cluster.shutdown)
	goleak.VerifyTestMain(runThenStop{m: m, stops: stops},
		// go-redis pools close their reaper goroutines asynchronously.
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"),
	)
}

// runThenStop runs the tests, then the stops given to Main.
type runThenStop struct {
	m     *testing.M
	stops []func()
}

func (r runThenStop) Run() int {
	code := r.m.Run()
	for _, stop := range r.stops {
		stop()
	}
	return code
}

// New returns a standalone Redis for the test. It fails the test (never skips) when no server can be
// had.
func New(t testing.TB) *Env {
	t.Helper()
	return newEnv(t, standalone.get(t), false)
}

// NewCluster returns a 3-master Redis Cluster on loopback for the test.
func NewCluster(t testing.TB) *Env {
	t.Helper()
	return newEnv(t, cluster.get(t), true)
}

// Each runs fn as a parallel subtest on a standalone server and on a cluster, so a suite proves it
// works on both.
func Each(t *testing.T, fn func(t *testing.T, env *Env)) {
	t.Helper()
	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		fn(t, New(t))
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		fn(t, NewCluster(t))
	})
}

func newEnv(t testing.TB, url string, isCluster bool) *Env {
	t.Helper()
	client, err := redisx.NewClient(url)
	if err != nil {
		t.Fatalf("redistest: client for %s: %v", url, err)
	}
	name := strings.NewReplacer("/", "-", " ", "_", ":", "-", "{", "", "}", "").Replace(t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	env := &Env{
		Client:  client,
		Prefix:  fmt.Sprintf("t%d-%s", prefixSeq.Add(1), name),
		URL:     url,
		Cluster: isCluster,
	}
	t.Cleanup(func() {
		// Minutes, not seconds: a benchmark may leave millions of keys on a busy machine.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := DeletePrefix(ctx, client, env.Prefix); err != nil {
			t.Errorf("redistest: remove keys of %s: %v", env.Prefix, err)
		}
		_ = client.Close()
	})
	return env
}

// DeletePrefix removes every key that starts with prefix, on every master of a cluster.
func DeletePrefix(ctx context.Context, client redis.UniversalClient, prefix string) error {
	// A page of keys is unlinked in one pipelined round trip, one key a command (the keys of a
	// cluster node's page span slots), so a benchmark's million keys go within the cleanup's time.
	del := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				pipe := c.Pipeline()
				for _, k := range keys {
					pipe.Unlink(ctx, k)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, del)
	case *redis.Client:
		return del(ctx, c)
	default:
		return fmt.Errorf("unsupported client type %T", client)
	}
}

func startStandalone() (string, func(), error) {
	p, err := startServer(false)
	if err != nil {
		return "", nil, err
	}
	return "redis://" + p.Addr(), p.stop, nil
}
