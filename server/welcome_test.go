package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// startLogged starts a server on env with a strong admin token, logging JSON into the returned
// buffer, and returns once it serves (the start's log lines are written by then).
func startLogged(t *testing.T, env *redistest.Env, adminToken string) (*testServer, *testio.Buffer) {
	t.Helper()
	logs := &testio.Buffer{}
	ts := newTestServerOn(t, env, func(c *Config) {
		c.AdminToken = adminToken
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	testwait.UntilNil(t, time.Minute, func() error {
		resp, err := http.Get(ts.AdminURL + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	return ts, logs
}

// firstTokenLine is the log line of firstTokenHint, if there is one.
func firstTokenLine(t *testing.T, logs string) map[string]string {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		var rec map[string]string
		if json.Unmarshal([]byte(l), &rec) == nil && strings.HasPrefix(rec["msg"], "no namespace yet") {
			return rec
		}
	}
	return nil
}

// TestExternalRedisSaysHowToMakeTheFirstToken: on an external Redis with no namespace yet, the
// server logs at INFO the exact command that makes the first namespace and its token, and the
// command works when pasted into a shell; once a namespace exists, a start says nothing of it.
func TestExternalRedisSaysHowToMakeTheFirstToken(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	const adminToken = "Zq7-Lm2x9WvT4nRb8Yc1Hk6PdJ3s"
	ts, logs := startLogged(t, env, adminToken)
	rec := firstTokenLine(t, logs.String())
	if rec == nil || rec["level"] != "INFO" {
		t.Fatalf("no INFO line on how to make the first token:\n%s", logs.String())
	}
	cmd := rec["command"]
	if !strings.Contains(cmd, ts.AdminURL+"/v1/namespaces/default/tokens") || !strings.Contains(cmd, `$SLUICE_ADMIN_TOKEN`) ||
		rec["cli"] != "sluice token create --ns default --admin-url "+ts.AdminURL {
		t.Fatalf("the hint: %v", rec)
	}
	sh := exec.Command("bash", "-c", cmd)
	sh.Env = append(os.Environ(), "SLUICE_ADMIN_TOKEN="+adminToken)
	out, err := sh.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	var made struct{ Namespace, Token string }
	if err := json.Unmarshal(out, &made); err != nil || made.Namespace != "default" || !strings.HasPrefix(made.Token, "sk_") {
		t.Fatalf("the command answered %s (%v)", out, err)
	}
	r := do(t, http.MethodPost, ts.PublicURL+"/v1/ns/default/queues/hello/jobs", made.Token, map[string]any{"payload": "hi"})
	wantStatus(t, r, http.StatusCreated, "")

	_, logs2 := startLogged(t, env, adminToken)
	if rec := firstTokenLine(t, logs2.String()); rec != nil {
		t.Fatalf("a start with a namespace in Redis still says how to make the first: %v", rec)
	}
}
