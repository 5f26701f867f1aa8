package ui

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func cookieOf(t *testing.T, s *sessions) *http.Cookie {
	t.Helper()
	rec := httptest.NewRecorder()
	s.issue(rec, httptest.NewRequest(http.MethodGet, "/ui/", nil))
	cs := rec.Result().Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %v", cs)
	}
	return cs[0]
}

func TestSessions(t *testing.T) {
	t.Parallel()
	s := newSessions("admin-token", time.Hour)
	c := cookieOf(t, s)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/" {
		t.Fatalf("cookie attributes %+v", c)
	}
	valid := func(s *sessions, c *http.Cookie) bool {
		r := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		r.AddCookie(c)
		_, ok := s.fromRequest(r)
		return ok
	}
	if !valid(s, c) {
		t.Fatal("a fresh session is refused")
	}
	// Another instance with the same admin token accepts it; one with another token does not.
	if !valid(newSessions("admin-token", time.Hour), c) || valid(newSessions("other", time.Hour), c) {
		t.Fatal("the session key is not derived from the admin token")
	}
	// An expired session, even correctly signed, is refused.
	raw := make([]byte, 24)
	binary.BigEndian.PutUint64(raw[16:], uint64(time.Now().Add(-time.Second).Unix()))
	old := &http.Cookie{Name: cookieName, Value: base64.RawURLEncoding.EncodeToString(raw) + "." +
		base64.RawURLEncoding.EncodeToString(s.mac([]byte("session"), raw))}
	if valid(s, old) {
		t.Fatal("an expired session is accepted")
	}
	// A changed expiry breaks the signature.
	binary.BigEndian.PutUint64(raw[16:], uint64(time.Now().Add(time.Hour).Unix()))
	forged := &http.Cookie{Name: cookieName, Value: base64.RawURLEncoding.EncodeToString(raw) + "." +
		base64.RawURLEncoding.EncodeToString(s.mac([]byte("session"), make([]byte, 24)))}
	if valid(s, forged) {
		t.Fatal("a forged session is accepted")
	}
	// Two sessions have different CSRF tokens.
	a, b := s.session([]byte("a")), s.session([]byte("b"))
	if a.csrf == b.csrf || a.csrf == "" {
		t.Fatal("CSRF tokens are not per session")
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
