package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

var secretRE = regexp.MustCompile(`export SLUICE_TOKEN=(sk_[0-9a-f]+)`)

// runEmbedded starts a server in embedded mode and returns it with its base URL and a stop func.
func runEmbedded(t *testing.T, cfg Config) (*Server, string, func()) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("New: %v", err)
	}
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pub, adm) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
			if err := srv.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	base := "http://" + pub.Addr().String()
	// Serve prints the welcome text before it serves: once /healthz answers, the text is out.
	testwait.Until(t, time.Minute, "the server to serve", func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return srv, base, stop
}

func TestEmbeddedManagedRedisKeepsData(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	out := &testio.Buffer{}
	srv, base, stop := runEmbedded(t, Config{DataDir: dir, Out: out})
	if srv.embedded == nil || !srv.embedded.managed {
		t.Fatal("embedded mode did not start a managed redis-server")
	}
	m := secretRE.FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "curl -s -X POST") {
		t.Fatalf("first start printed no token and curl lines:\n%s", out.String())
	}
	tok := m[1]
	if _, err := New(ctxT(t), Config{DataDir: dir, Out: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil ||
		!strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second server on the same data dir: %v", err)
	}
	r := do(t, http.MethodPost, base+"/v1/ns/default/queues/hello/jobs", tok, map[string]any{"payload": "kept"})
	wantStatus(t, r, http.StatusCreated, "")
	stop()
	if srv.embedded.cmd.ProcessState == nil {
		t.Fatal("the redis-server child still runs after Close")
	}
	if _, err := os.Stat(filepath.Join(dir, "appendonlydir")); err != nil {
		t.Fatalf("no append-only files in the data dir: %v", err)
	}

	out2 := &testio.Buffer{}
	_, base2, _ := runEmbedded(t, Config{DataDir: dir, Out: out2})
	if secretRE.MatchString(out2.String()) || !strings.Contains(out2.String(), "/v1/namespaces/default/tokens") {
		t.Fatalf("second start should say how to make a token, not print one:\n%s", out2.String())
	}
	r = do(t, http.MethodPost, base2+"/v1/ns/default/consume", tok, map[string]any{"queues": []string{"hello"}})
	wantStatus(t, r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), `"kept"`) {
		t.Fatalf("the job did not survive the restart: %s", r.Body)
	}
}

func TestEmbeddedInProcessFallback(t *testing.T) {
	t.Parallel()
	out := &testio.Buffer{}
	srv, base, _ := runEmbedded(t, Config{
		DataDir:         filepath.Join(t.TempDir(), "unused"),
		RedisServerPath: filepath.Join(t.TempDir(), "no-such-redis-server"),
		Out:             out,
	})
	if srv.embedded == nil || srv.embedded.managed {
		t.Fatal("the in-process store was not used")
	}
	if !strings.Contains(out.String(), "NOTHING SURVIVES A RESTART") {
		t.Fatalf("no loud warning:\n%s", out.String())
	}
	m := secretRE.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no token printed:\n%s", out.String())
	}
	r := do(t, http.MethodPost, base+"/v1/ns/default/queues/hello/jobs", m[1], map[string]any{"payload": map[string]int{"n": 1}})
	wantStatus(t, r, http.StatusCreated, "")
	r = do(t, http.MethodPost, base+"/v1/ns/default/consume", m[1], map[string]any{"queues": []string{"hello"}, "timeout": 5})
	wantStatus(t, r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), `{"n":1}`) {
		t.Fatalf("consume on the in-process store: %s", r.Body)
	}
}
