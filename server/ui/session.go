package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// cookieName is the dashboard's session cookie. Its value is a random session id; the session
// itself lives in Redis (sessionKey), so logging out, "log out everywhere" and a new admin token
// end it on every server at once.
const cookieName = "sluice_ui"

// sessionIDLen is the length of a session id in the cookie: 32 random bytes in base64url.
const sessionIDLen = 43

type sessionKeyCtx struct{}

// session is a logged-in dashboard visitor.
type session struct {
	idHash string // the SHA-256 of the cookie's id, in hex: the session's name in Redis
	csrf   string
	// ns, for a session opened with a namespace token, is the one namespace it may see and act
	// on (scope.go); tokenID names that token, whose revocation ends the session. Both are ""
	// for an admin session.
	ns, tokenID string
}

// sessions issues, checks and ends dashboard sessions, stored in Redis (session_new.lua,
// session_get.lua) with a lifetime and an idle timeout.
type sessions struct {
	scripts  *redisx.ScriptRunner
	cfg      Config
	epochKey string
	// tokenPrint is the fingerprint of the admin token, kept in each session: a session made under
	// another token (before a rotation) is dead on a server with this one.
	tokenPrint string
}

func newSessions(cfg Config, scripts *redisx.ScriptRunner) *sessions {
	m := hmac.New(sha256.New, []byte("sluice dashboard session v2"))
	m.Write([]byte(cfg.AdminToken))
	return &sessions{scripts: scripts, cfg: cfg, epochKey: sessionEpochKey(cfg.Prefix),
		tokenPrint: hex.EncodeToString(m.Sum(nil)[:16])}
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// issue makes a new session in Redis and sets its cookie: an admin session, or with ns and
// tokenID set one scoped to a namespace.
func (s *sessions) issue(w http.ResponseWriter, r *http.Request, ns, tokenID string) (session, error) {
	id := randomString(32)
	sess := session{idHash: hashID(id), csrf: randomString(24), ns: ns, tokenID: tokenID}
	err := s.scripts.Run(r.Context(), "session_new", []string{sessionKey(s.cfg.Prefix, sess.idHash), s.epochKey},
		sess.csrf, s.tokenPrint, s.cfg.SessionTTL.Milliseconds(), s.cfg.SessionIdleTimeout.Milliseconds(), ns, tokenID).Err()
	if err != nil {
		return session{}, fmt.Errorf("ui: new session: %w", err)
	}
	setCookie(w, r, id, int(s.cfg.SessionTTL/time.Second))
	return sess, nil
}

// setCookie sets the session cookie (maxAge < 0 removes it). It is Secure when the browser's
// request came over TLS, to this server or to a trusted proxy that said so; the admin listener is
// usually plain HTTP on loopback, where a Secure cookie would never come back.
func setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	st := httpapi.StateOf(r.Context())
	secure := r.TLS != nil || (st != nil && st.HTTPS)
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // Secure over TLS only: see above
		Name: cookieName, Value: value, Path: "/ui/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure,
	})
}

// fromRequest returns the request's session when its cookie names a live one, and pushes the
// session's idle timeout back.
func (s *sessions) fromRequest(r *http.Request) (session, bool, error) {
	cookies := r.CookiesNamed(cookieName)
	if len(cookies) == 0 || len(cookies[0].Value) != sessionIDLen || strings.Trim(cookies[0].Value, base64url) != "" {
		return session{}, false, nil
	}
	idHash := hashID(cookies[0].Value)
	rec, err := s.scripts.Run(r.Context(), "session_get", []string{sessionKey(s.cfg.Prefix, idHash), s.epochKey},
		s.tokenPrint, s.cfg.SessionIdleTimeout.Milliseconds()).StringSlice()
	switch {
	case errors.Is(err, redis.Nil):
		return session{}, false, nil
	case err != nil:
		return session{}, false, fmt.Errorf("ui: session: %w", err)
	case len(rec) != 3:
		return session{}, false, fmt.Errorf("ui: session: %d fields", len(rec))
	}
	return session{idHash: idHash, csrf: rec[0], ns: rec[1], tokenID: rec[2]}, true, nil
}

const base64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// end deletes a session: its cookie is no session anywhere from now on.
func (s *sessions) end(ctx context.Context, sess session) error {
	if err := s.cfg.Redis.Del(ctx, sessionKey(s.cfg.Prefix, sess.idHash)).Err(); err != nil {
		return fmt.Errorf("ui: end session: %w", err)
	}
	return nil
}

// endAll ends every session, on every server: the epoch moves on, and each session's next look-up
// finds it made in an earlier one.
func (s *sessions) endAll(ctx context.Context) error {
	if err := s.cfg.Redis.Incr(ctx, s.epochKey).Err(); err != nil {
		return fmt.Errorf("ui: end sessions: %w", err)
	}
	return nil
}

// checkCSRF refuses a POST whose form field "csrf" (or X-CSRF-Token header) is not the session's,
// or whose Origin, when sent, is not the dashboard's own.
func checkCSRF(r *http.Request, sess session) error {
	if err := checkOrigin(r); err != nil {
		return err
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

// checkOrigin refuses a request whose Origin, when sent, is not the dashboard's own.
func checkOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			return &httpapi.Error{Code: httpapi.CodePermissionDenied, Message: "the request comes from another site (Origin " + o + ")"}
		}
	}
	return nil
}

// checkToken reports whether secret is the admin token.
func (s *sessions) checkToken(secret string) bool {
	return s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.cfg.AdminToken)) == 1
}
