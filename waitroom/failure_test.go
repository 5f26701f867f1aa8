package waitroom_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// cuttableRedis is a TCP forwarder to the test Redis that the test can cut, so a client loses
// Redis in the middle of a test without stopping the shared server.
type cuttableRedis struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCuttableRedis(t *testing.T, env *redistest.Env) (*cuttableRedis, redis.UniversalClient) {
	t.Helper()
	u, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttableRedis{ln: ln}
	p.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", u.Host)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			p.wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, Protocol: 2})
	t.Cleanup(func() { client.Close(); p.cut() })
	return p, client
}

// cut closes the listener and every forwarded connection: the client's Redis is gone.
func (p *cuttableRedis) cut() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func TestFailOpenAndFailClosed(t *testing.T) {
	t.Parallel()
	for _, failOpen := range []bool{true, false} {
		name := "closed"
		if failOpen {
			name = "open"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := redistest.New(t)
			key := testKey()
			admin := newClient(t, env, waitroom.Config{PassKeys: [][]byte{key}})
			if _, err := admin.SetRoom(context.Background(), "r", waitroom.RoomConfig{MaxActive: 1, FailOpen: failOpen}); err != nil {
				t.Fatal(err)
			}
			proxy, rdb := newCuttableRedis(t, env)
			c, err := waitroom.NewClient(rdb, waitroom.Config{Prefix: env.Prefix, PassKeys: [][]byte{key}})
			if err != nil {
				t.Fatal(err)
			}
			room, _ := c.Room("r")
			_, site := middlewareSite(t, room)

			holder := browser(t)
			if r := do(t, holder, "GET", site.URL+"/", nil); r.code != 200 {
				t.Fatalf("holder: %d", r.code)
			}
			proxy.cut()
			// The pass works without Redis either way.
			if r := do(t, holder, "GET", site.URL+"/again", nil); r.code != 200 {
				t.Fatalf("pass holder without redis: %d", r.code)
			}
			r := do(t, browser(t), "GET", site.URL+"/", nil)
			if failOpen {
				if r.code != 200 || !strings.Contains(r.body, "upstream page") {
					t.Fatalf("fail-open newcomer: %d %q", r.code, r.body)
				}
			} else if r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, "cannot be reached") {
				t.Fatalf("fail-closed newcomer: %d %q", r.code, r.body)
			}
			got := room.Counters()
			if got.RedisErrors == 0 || failOpen && got.FailedOpen == 0 || !failOpen && got.FailedClosed == 0 {
				t.Fatalf("counters %+v", got)
			}
		})
	}
}
