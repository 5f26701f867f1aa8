package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// cookieName is the dashboard's session cookie. Its value is opaque: a random session id and its
// expiry, signed with a key derived from the admin token (so a session is valid on every server
// instance sharing that token, and ends when the token changes).
const cookieName = "sluice_ui"

type sessionKey struct{}

// session is a logged-in dashboard visitor.
type session struct {
	id   []byte
	csrf string
}

// sessions issues and checks session cookies and their CSRF tokens.
type sessions struct {
	key   []byte
	token string
	ttl   time.Duration
}

func newSessions(adminToken string, ttl time.Duration) *sessions {
	var key []byte
	if adminToken != "" {
		m := hmac.New(sha256.New, []byte("sluice dashboard session v1"))
		m.Write([]byte(adminToken))
		key = m.Sum(nil)
	} else {
		// Without an admin token there is nothing to derive from: sessions last as long as the
		// process (and the dashboard hands out a new one on the next page view).
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return &sessions{key: key, token: adminToken, ttl: ttl}
}

func (s *sessions) mac(parts ...[]byte) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write(p)
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// issue makes a new session and sets its cookie.
func (s *sessions) issue(w http.ResponseWriter, r *http.Request) session {
	raw := make([]byte, 24)
	_, _ = rand.Read(raw[:16])
	exp := time.Now().Add(s.ttl)
	binary.BigEndian.PutUint64(raw[16:], uint64(exp.Unix()))
	value := base64.RawURLEncoding.EncodeToString(raw) + "." + base64.RawURLEncoding.EncodeToString(s.mac([]byte("session"), raw))
	// Secure only over TLS: the admin listener is usually plain HTTP on loopback, where a Secure
	// cookie would never be sent back.
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // see above
		Name: cookieName, Value: value, Path: "/ui/", Expires: exp, MaxAge: int(s.ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return s.session(raw[:16])
}

func (s *sessions) session(id []byte) session {
	return session{id: id, csrf: base64.RawURLEncoding.EncodeToString(s.mac([]byte("csrf"), id)[:18])}
}

// fromRequest returns the request's session when its cookie is valid and not expired.
func (s *sessions) fromRequest(r *http.Request) (session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	body, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return session{}, false
	}
	raw, err1 := base64.RawURLEncoding.DecodeString(body)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || len(raw) != 24 || !hmac.Equal(mac, s.mac([]byte("session"), raw)) {
		return session{}, false
	}
	if time.Now().Unix() >= int64(binary.BigEndian.Uint64(raw[16:])) { //nolint:gosec // a Unix time we wrote
		return session{}, false
	}
	return s.session(raw[:16]), true
}

// checkCSRF refuses a POST whose form field "csrf" (or X-CSRF-Token header) is not the session's,
// or whose Origin, when sent, is not the dashboard's own.
func (s *sessions) checkCSRF(r *http.Request, sess session) error {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return &httpapi.Error{Code: httpapi.CodePermissionDenied, Message: "the request comes from another site (Origin " + o + ")"}
		}
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		return &httpapi.Error{Code: httpapi.CodePermissionDenied, Message: "the form's CSRF token is missing or stale: reload the page and try again"}
	}
	return nil
}

// checkToken reports whether secret is the admin token.
func (s *sessions) checkToken(secret string) bool {
	return s.token != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.token)) == 1
}

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) error {
	if _, ok := u.sessions.fromRequest(r); ok || u.cfg.AdminToken == "" {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther) //nolint:gosec // safeNext keeps it under /ui/
		return nil
	}
	u.render(w, r, http.StatusOK, "login", "Log in", map[string]any{"Next": safeNext(r.URL.Query().Get("next"))})
	return nil
}

// login checks the admin token once and swaps it for a session cookie.
func (u *UI) login(w http.ResponseWriter, r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		if pu, err := url.Parse(o); err != nil || !strings.EqualFold(pu.Host, r.Host) {
			return &httpapi.Error{Code: httpapi.CodePermissionDenied, Message: "the request comes from another site (Origin " + o + ")"}
		}
	}
	next := safeNext(r.PostFormValue("next"))
	if u.cfg.AdminToken == "" {
		http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // safeNext keeps it under /ui/
		return nil
	}
	if !u.sessions.checkToken(r.PostFormValue("token")) {
		u.render(w, r, http.StatusUnauthorized, "login", "Log in", map[string]any{"Next": next, "Failed": true})
		return nil
	}
	u.sessions.issue(w, r)
	http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // safeNext keeps it under /ui/
	return nil
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}) //nolint:gosec // Secure over TLS only, as in issue
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}

// safeNext keeps a post-login redirect inside the dashboard.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}
