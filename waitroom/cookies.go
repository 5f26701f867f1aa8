package waitroom

import (
	"net/http"
	"time"
)

// visitorCookie carries the signed visitor id; it is shared by every room of a site, so a visitor
// waiting in two rooms is one visitor. Pass cookies are per room.
const visitorCookie = "sluice_visitor"

func passCookie(room string) string { return "sluice_pass_" + room }

// visitorTTL is how long a browser keeps the visitor id.
const visitorTTL = 24 * time.Hour

func (c *Client) secure(r *http.Request) bool { return c.cfg.SecureCookies || r.TLS != nil }

// newVisitor gives the request's browser a new visitor id (a signed cookie). The id enters no
// line yet: the browser's next request carrying it does (entry.go). A refresh or a second tab
// sends the same cookie, so keeps the same place.
func (c *Client) newVisitor(w http.ResponseWriter, r *http.Request) string {
	id := newVisitorID()
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure follows the request (TLS or Config.SecureCookies); HttpOnly and SameSite are set
		Name: visitorCookie, Value: c.signer.signVisitor(id), Path: "/", MaxAge: int(visitorTTL / time.Second),
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteLaxMode,
	})
	return id
}

// knownVisitor returns the id in the request's visitor cookie, or "" without a valid one.
func (c *Client) knownVisitor(r *http.Request) string {
	v, ok := cookieValue(r, visitorCookie)
	if !ok {
		return ""
	}
	return c.signer.checkVisitor(v)
}

// requestPass returns the request's valid pass of room (a bound one only beside its visitor
// cookie).
func (room *Room) requestPass(r *http.Request) (Pass, bool) {
	v, ok := cookieValue(r, room.passCookieName)
	if !ok {
		return Pass{}, false
	}
	return room.checkPass(v, r)
}

func (c *Client) setPass(w http.ResponseWriter, r *http.Request, room, value string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure follows the request (TLS or Config.SecureCookies); HttpOnly and SameSite are set
		Name: passCookie(room), Value: value, Path: "/", Expires: expires,
		MaxAge:   max(1, int(time.Until(expires)/time.Second)),
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteLaxMode,
	})
}

func (c *Client) clearPass(w http.ResponseWriter, r *http.Request, room string) {
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure follows the request (TLS or Config.SecureCookies); HttpOnly and SameSite are set
		Name: passCookie(room), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteLaxMode,
	})
}
