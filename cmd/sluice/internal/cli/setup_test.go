package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// testAdminToken is the test servers' admin token: strong enough for the server's checks.
const testAdminToken = "test-admin-token-4f9c2a7e1b"

// fixture is a real server on loopback listeners over a per-test Redis prefix, and a namespace
// token made with `sluice token create`.
type fixture struct {
	PublicURL, AdminURL string
	AdminToken          string
	NS, Token           string
}

// setup starts a server for the test and stops it when the test ends.
func setup(t *testing.T) *fixture {
	t.Helper()
	srv := servertest.Start(t, server.Config{AdminToken: testAdminToken})
	f := &fixture{
		PublicURL:  srv.PublicURL,
		AdminURL:   srv.AdminURL,
		AdminToken: testAdminToken,
		NS:         "shop",
	}
	var tok struct {
		Token string `json:"token"`
		ID    string `json:"id"`
	}
	f.mustJSON(t, &tok, "token", "create", "--ns", f.NS, "--json")
	f.Token = tok.Token
	if f.Token == "" {
		t.Fatalf("token create --json gave no token")
	}
	return f
}

// result is what one command run printed and returned.
type result struct {
	Stdout, Stderr string
	Code           int
}

// env is the environment the commands see: the server's URLs and the tokens.
func (f *fixture) env(extra ...string) map[string]string {
	m := map[string]string{
		"SLUICE_URL":         f.PublicURL,
		"SLUICE_TOKEN":       f.Token,
		"SLUICE_NAMESPACE":   f.NS,
		"SLUICE_ADMIN_URL":   f.AdminURL,
		"SLUICE_ADMIN_TOKEN": f.AdminToken,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// run runs a sluice command in-process against the fixture's server.
func (f *fixture) run(t *testing.T, args ...string) result {
	t.Helper()
	return runWith(t, f.env(), "", args...)
}

// runWith runs a sluice command with an environment and standard input.
func runWith(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := MainEnv(ctx, args, &Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errOut,
		Getenv: func(k string) string { return env[k] },
	})
	return result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// must runs a command that has to succeed and returns its standard output.
func (f *fixture) must(t *testing.T, args ...string) string {
	t.Helper()
	r := f.run(t, args...)
	if r.Code != 0 {
		t.Fatalf("sluice %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// mustJSON runs a command that has to succeed and decodes its JSON output into v.
func (f *fixture) mustJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := f.must(t, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("sluice %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// wantFail checks a command fails with the exit code and stderr holding each of the texts.
func wantFail(t *testing.T, r result, code int, texts ...string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.Code, code, r.Stdout, r.Stderr)
	}
	for _, s := range texts {
		if !strings.Contains(r.Stderr, s) {
			t.Errorf("stderr %q lacks %q", r.Stderr, s)
		}
	}
}

// wantOut checks a text holds each of the fragments.
func wantOut(t *testing.T, out string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}
