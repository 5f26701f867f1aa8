package ui

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/server/internal/authguard"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// errWrongToken is a login with a token that is neither the admin token nor a namespace token
// with the manage permission.
var errWrongToken = errors.New("ui: not the admin token")

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) error {
	next := safeNext(r.URL.Query().Get("next"))
	if u.cfg.AdminToken == "" {
		http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // safeNext keeps it under /ui/
		return nil
	}
	if _, ok, err := u.sessions.fromRequest(r); err != nil {
		return err
	} else if ok {
		http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // safeNext keeps it under /ui/
		return nil
	}
	u.render(w, r, http.StatusOK, "login", "Log in", map[string]any{"Next": next})
	return nil
}

// login checks the admin token (or a namespace token: scope.go) once, under the limit of failed authentications (a client that
// failed too often gets the page again with 429 and how long to wait), and swaps it for a
// session cookie.
func (u *UI) login(w http.ResponseWriter, r *http.Request) error {
	if err := checkOrigin(r); err != nil {
		return err
	}
	next := safeNext(r.PostFormValue("next"))
	if u.cfg.AdminToken == "" {
		http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // safeNext keeps it under /ui/
		return nil
	}
	// The admin token opens an admin session; a namespace token with the manage permission, one
	// limited to its namespace (scope.go).
	var scoped tenant.Token
	err := httpapi.Authenticate(r, authguard.Dashboard, errWrongToken, func(ctx context.Context) (bool, error) {
		secret := r.PostFormValue("token")
		if u.sessions.checkToken(secret) {
			return true, nil
		}
		t, ok, err := u.namespaceToken(ctx, secret)
		scoped = t
		return ok, err
	})
	if errors.Is(err, errWrongToken) {
		u.render(w, r, http.StatusUnauthorized, "login", "Log in", map[string]any{"Next": next, "Failed": true})
		return nil
	}
	var e *httpapi.Error
	if errors.As(err, &e) && e.Code == httpapi.CodeAuthBackoff {
		httpapi.SetRetryAfter(w, e.RetryAfter)
		u.render(w, r, e.Status(), "login", "Log in", map[string]any{"Next": next, "Wait": e.Message})
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := u.sessions.issue(w, r, scoped.Namespace, scoped.ID); err != nil {
		return err
	}
	http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // safeNext keeps it under /ui/
	return nil
}

// logout ends the session on every server and removes its cookie.
func (u *UI) logout(w http.ResponseWriter, r *http.Request) error {
	sess, _ := r.Context().Value(sessionKeyCtx{}).(session)
	if err := u.sessions.end(r.Context(), sess); err != nil {
		return err
	}
	setCookie(w, r, "", -1)
	return done(w, r, "/ui/login", noteLoggedOut, 0)
}

// logoutEverywhere ends every dashboard session on every server (a cookie that may have leaked,
// a colleague who left), this one too.
func (u *UI) logoutEverywhere(w http.ResponseWriter, r *http.Request) error {
	if err := u.sessions.endAll(r.Context()); err != nil {
		return err
	}
	setCookie(w, r, "", -1)
	return done(w, r, "/ui/login", noteLoggedOutEverywhere, 0)
}

// EndAllSessions ends every dashboard session on every server sharing the Redis: the admin
// API's DELETE /v1/dashboard/sessions, for when a cookie may have leaked and no browser is at hand.
func (u *UI) EndAllSessions(ctx context.Context) error { return u.sessions.endAll(ctx) }

// safeNext keeps a post-login redirect inside the dashboard.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}
