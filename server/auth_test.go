package server

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// credentialCase is one kind of credential the server checks: send makes a request with a
// right or a wrong one and returns the answer; ok and wrong are the statuses of each.
type credentialCase struct {
	kind      string
	send      func(t *testing.T, ts *credentialTarget, right bool) response
	ok, wrong int
}

// credentialTarget is a server and a token of its namespace shop.
type credentialTarget struct {
	*testServer
	nsToken string
}

func newCredentialTarget(t *testing.T, opts ...func(*Config)) *credentialTarget {
	t.Helper()
	ts := newTestServer(t, opts...)
	return &credentialTarget{testServer: ts, nsToken: ts.token(t, "shop")}
}

func adminBearer(t *testing.T, ts *credentialTarget, right bool) response {
	t.Helper()
	tok := ts.AdminToken
	if !right {
		tok = "wrong-" + ts.AdminToken
	}
	return do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", tok, nil)
}

// credentialCases are the credentials under the limit of failed authentications.
var credentialCases = []credentialCase{
	{kind: "admin", ok: http.StatusOK, wrong: http.StatusUnauthorized, send: adminBearer},
	{kind: "admin", ok: http.StatusOK, wrong: http.StatusUnauthorized, send: func(t *testing.T, ts *credentialTarget, right bool) response {
		// lmstfy's admin tools send the admin token as the password of Basic auth.
		pw := ts.AdminToken
		if !right {
			pw = "guess"
		}
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, ts.AdminURL+"/v1/namespaces", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("admin", pw)
		return exchange(t, noRedirects, req)
	}},
	{kind: "token", ok: http.StatusOK, wrong: http.StatusUnauthorized, send: func(t *testing.T, ts *credentialTarget, right bool) response {
		tok := "sk_guessed0123456789"
		if right {
			tok = ts.nsToken
		}
		return ts.public(t, http.MethodGet, "/v1/ns/shop/queues", tok, nil)
	}},
	{kind: "token", ok: http.StatusOK, wrong: http.StatusUnauthorized, send: func(t *testing.T, ts *credentialTarget, right bool) response {
		tok := "guessed0123456789abcd"
		if right {
			tok = ts.nsToken
		}
		return ts.public(t, http.MethodGet, "/api/shop/q/size?token="+url.QueryEscape(tok), "", nil)
	}},
	{kind: "dashboard", ok: http.StatusSeeOther, wrong: http.StatusUnauthorized, send: func(t *testing.T, ts *credentialTarget, right bool) response {
		tok := "not-the-admin-token"
		if right {
			tok = ts.AdminToken
		}
		return newDashboard(t, ts.testServer).send(t, http.MethodPost, "/ui/login", url.Values{"token": {tok}}, nil)
	}},
}

// wantBackoff fails unless r is the 429 auth_backoff with a Retry-After, and returns the wait.
func wantBackoff(t *testing.T, r response) time.Duration {
	t.Helper()
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.Status != http.StatusTooManyRequests || err != nil || secs < 1 {
		t.Fatalf("got %d Retry-After %q %s, want 429 with Retry-After", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if !strings.Contains(string(r.Body), "too many failed") {
		t.Fatalf("the 429 does not say why: %s", r.Body)
	}
	if strings.HasPrefix(string(r.Body), `{"error":{`) && r.ErrorCode() != "auth_backoff" {
		t.Fatalf("the native API's 429 has code %q, want auth_backoff", r.ErrorCode())
	}
	return time.Duration(secs) * time.Second
}

// Every credential (admin bearer and Basic, namespace tokens of both APIs, the dashboard's login)
// is under the limit: ten wrong ones in a minute answer as usual, the eleventh 429 with
// Retry-After and a WARN line naming the client's address, and the metrics count them. While the
// client waits even the right credential is refused (it is not checked); after the wait it works,
// and the success gives the client a fresh allowance.
func TestFailedAuthenticationsBackOff(t *testing.T) {
	t.Parallel()
	for i, c := range credentialCases {
		t.Run(c.kind+strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			log := &testio.Buffer{}
			ts := newCredentialTarget(t, func(cfg *Config) { cfg.Logger = slog.New(slog.NewTextHandler(log, nil)) })
			for n := 1; n <= 10; n++ {
				if r := c.send(t, ts, false); r.Status != c.wrong {
					t.Fatalf("wrong credential %d: %d %s, want %d", n, r.Status, r.Body, c.wrong)
				}
			}
			wait := wantBackoff(t, c.send(t, ts, false))
			wantBackoff(t, c.send(t, ts, true))
			line := "level=WARN msg=\"authentication failed\" kind=" + c.kind + " client_addr=127.0.0.1 failures=11 retry_after=1s"
			if !strings.Contains(log.String(), line) {
				t.Fatalf("log lacks %q:\n%s", line, log)
			}
			metrics := string(do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Body)
			for _, want := range []string{`sluice_auth_failures_total{kind="` + c.kind + `"} 11`, `sluice_auth_backoff_total{kind="` + c.kind + `"} `} {
				if !strings.Contains(metrics, want) {
					t.Fatalf("metrics lack %s", want)
				}
			}
			testwait.Until(t, wait+10*time.Second, "the right credential after the wait", func() bool {
				return c.send(t, ts, true).Status == c.ok
			})
			for n := 1; n <= 10; n++ {
				if r := c.send(t, ts, false); r.Status != c.wrong {
					t.Fatalf("after a success, wrong credential %d: %d, want %d (a fresh allowance)", n, r.Status, c.wrong)
				}
			}
		})
	}
}

// Failures count per client, whatever they tried: a client cannot spread its guesses over the
// admin token, namespace tokens and the login.
func TestFailedAuthenticationsCountAcrossKinds(t *testing.T) {
	t.Parallel()
	ts := newCredentialTarget(t)
	for n := range 10 {
		c := credentialCases[n%len(credentialCases)]
		if r := c.send(t, ts, false); r.Status != c.wrong {
			t.Fatalf("wrong %s credential: %d", c.kind, r.Status)
		}
	}
	wantBackoff(t, adminBearer(t, ts, false))
	// A request without any credential guesses nothing and is not counted: it gets the usual 401.
	wantStatus(t, do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", "", nil), http.StatusUnauthorized, "unauthenticated")
}
