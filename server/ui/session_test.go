package ui

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// newTestSessions returns the sessions of a dashboard with adminToken on env.
func newTestSessions(t *testing.T, env *redistest.Env, adminToken string) *sessions {
	t.Helper()
	cfg := Config{Redis: env.Client, Prefix: env.Prefix, AdminToken: adminToken}.withDefaults()
	return newSessions(cfg, newScripts(cfg))
}

// issue makes a session and returns it with its cookie.
func issue(t *testing.T, s *sessions, r *http.Request) (session, *http.Cookie) {
	t.Helper()
	rec := httptest.NewRecorder()
	sess, err := s.issue(rec, r, "", "")
	if err != nil {
		t.Fatal(err)
	}
	cs := rec.Result().Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %v", cs)
	}
	return sess, cs[0]
}

func lookup(t *testing.T, s *sessions, c *http.Cookie) (session, bool) {
	t.Helper()
	r := httptest.NewRequestWithContext(ctxT(t), http.MethodGet, "/ui/", nil)
	r.AddCookie(c)
	sess, ok, err := s.fromRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	return sess, ok
}

func TestSessions(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		const token = "dashboard-test-token-0123456789"
		s := newTestSessions(t, env, token)
		sess, c := issue(t, s, httptest.NewRequestWithContext(ctxT(t), http.MethodGet, "/ui/", nil))
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/" || c.Secure || c.MaxAge != 12*3600 {
			t.Fatalf("cookie attributes %+v", c)
		}
		got, ok := lookup(t, s, c)
		if !ok || got != sess || sess.csrf == "" {
			t.Fatalf("a fresh session: %+v %v, issued %+v", got, ok, sess)
		}
		// Redis holds the session under the hash of its id, never the id, with the idle timeout.
		key := sessionKey(env.Prefix, hashID(c.Value))
		if ttl, err := env.Client.PTTL(ctxT(t), key).Result(); err != nil || ttl <= 0 || ttl > 30*time.Minute {
			t.Fatalf("session key ttl %s %v", ttl, err)
		}
		if n, _ := env.Client.Exists(ctxT(t), sessionKey(env.Prefix, c.Value)).Result(); n != 0 {
			t.Fatal("the cookie's id is a key in Redis")
		}
		// Another instance with the same admin token accepts it; one with another token does not.
		if _, ok := lookup(t, newTestSessions(t, env, token), c); !ok {
			t.Fatal("another instance refuses the session")
		}
		other, oc := issue(t, s, httptest.NewRequestWithContext(ctxT(t), http.MethodGet, "/ui/", nil))
		if other.csrf == sess.csrf {
			t.Fatal("two sessions share a CSRF token")
		}
		if _, ok := lookup(t, newTestSessions(t, env, token+"-rotated"), oc); ok {
			t.Fatal("a server with a new admin token accepts a session of the old one")
		}
		if _, ok := lookup(t, s, oc); ok {
			t.Fatal("a session refused for its token is still alive")
		}
		// Ending a session ends it for everyone; the others live on.
		third, tc := issue(t, s, httptest.NewRequestWithContext(ctxT(t), http.MethodGet, "/ui/", nil))
		if err := s.end(ctxT(t), sess); err != nil {
			t.Fatal(err)
		}
		if _, ok := lookup(t, newTestSessions(t, env, token), c); ok {
			t.Fatal("an ended session is alive")
		}
		if got, ok := lookup(t, s, tc); !ok || got != third {
			t.Fatal("ending one session ended another")
		}
		// Log out everywhere: every session made before is dead, new ones live.
		if err := newTestSessions(t, env, token).endAll(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if _, ok := lookup(t, s, tc); ok {
			t.Fatal("a session survived log out everywhere")
		}
		_, nc := issue(t, s, httptest.NewRequestWithContext(ctxT(t), http.MethodGet, "/ui/", nil))
		if _, ok := lookup(t, s, nc); !ok {
			t.Fatal("a session made after log out everywhere is refused")
		}
		// A session past its lifetime is dead, whatever its idle timeout says.
		if err := env.Client.HSet(ctxT(t), sessionKey(env.Prefix, hashID(nc.Value)), "ends", time.Now().Add(-time.Second).UnixMilli()).Err(); err != nil {
			t.Fatal(err)
		}
		if _, ok := lookup(t, s, nc); ok {
			t.Fatal("a session past its lifetime is alive")
		}
		// Cookies that are no session id cost no look-up and are no session.
		for _, v := range []string{"", "short", c.Value + "x", "!" + c.Value[1:]} {
			if _, ok := lookup(t, s, &http.Cookie{Name: cookieName, Value: v}); ok {
				t.Fatalf("cookie %q is a session", v)
			}
		}
	})
}

// The cookie is Secure when the browser's request came over TLS: to this server, or to a trusted
// proxy that said so (the server's middleware sets RequestState.HTTPS).
func TestSessionCookieSecure(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	s := newTestSessions(t, env, "")
	r := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	st := &httpapi.RequestState{HTTPS: true}
	_, c := issue(t, s, r.WithContext(httpapi.WithState(ctxT(t), st)))
	if !c.Secure {
		t.Fatal("a session over https is not Secure")
	}
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/ui/tokens": "/ui/tokens", "": "/ui/", "//evil.example/ui/": "/ui/", "https://evil.example/": "/ui/",
		"/ui/\\evil": "/ui/", "/metrics": "/ui/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoteText(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]string{
		"note=purged&n=5":  "Purged 5 jobs.",
		"note=resumed":     "Resumed.",
		"note=resumed&n=9": "Resumed.",
		"note=purged":      "",
		"note=purged&n=x":  "",
		"note=purged&n=-1": "",
		"note=Your+account+is+locked%3A+call+555-0100": "",
		"note=%25d": "",
		"":          "",
		"n=3":       "",
	} {
		q, _ := url.ParseQuery(query)
		if got := noteText(q); got != want {
			t.Errorf("noteText(%s) = %q, want %q", query, got, want)
		}
	}
}
