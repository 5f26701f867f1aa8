package waitroom

import (
	"net/http"
	"path"
	"strings"
	"time"
)

// A release is final for a while: the browser that released its place gets a "left" cookie for
// the room (Config.LeftWindow), and its requests in that time are answered as left instead of
// putting it back in line as a visitor who never polls (and who would hold up the line's head).
// Requests for assets never put a visitor in line at all: a browser asks for the favicon, images
// and scripts without ever polling for their sake.

func leftCookie(room string) string { return "sluice_left_" + room }

// setLeft marks the browser as having left room.
func (c *Client) setLeft(w http.ResponseWriter, r *http.Request, room, visitor string) {
	http.SetCookie(w, c.leftCookieOf(r, room, visitor))
}

// leftCookieOf is the cookie that marks the browser of visitor as having left room, from now for
// Config.LeftWindow.
func (c *Client) leftCookieOf(r *http.Request, room, visitor string) *http.Cookie {
	expires := time.Now().Add(c.cfg.LeftWindow)
	return &http.Cookie{ //nolint:gosec // G124: Secure follows the request (TLS or Config.SecureCookies); HttpOnly and SameSite are set
		Name: leftCookie(room), Value: c.signer.signToken(purposeLeft, room, visitor, expires), Path: "/",
		Expires: expires, MaxAge: int(c.cfg.LeftWindow / time.Second),
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteLaxMode,
	}
}

// LeftHeader carries, on the nginx check's 200, the Set-Cookie value of the left cookie of the
// visitor let through. nginx cannot sign a cookie, and once the app's answer says "Sluice-Room:
// release" it is too late to ask Sluice for one without holding up the answer; so the check
// signs it beforehand, and nginx hands it to the browser only with an answer that releases (the
// release itself follows the answer; deploy/nginx/waitroom.conf shows how). The cookie marks the
// visitor's own browser as having left; it admits nobody.
const LeftHeader = "Sluice-Room-Left"

// hasLeft reports whether the request carries a valid, unexpired left cookie of room.
func (c *Client) hasLeft(r *http.Request, room string) bool {
	v, ok := cookieValue(r, leftCookie(room))
	if !ok {
		return false
	}
	_, ok = c.signer.checkToken(purposeLeft, room, v, time.Now())
	return ok
}

// assetDestinations are the Sec-Fetch-Dest values of requests a browser makes for a page's
// resources rather than for a page or a status poll.
var assetDestinations = map[string]bool{
	"image": true, "script": true, "style": true, "font": true, "audio": true, "video": true,
	"track": true, "manifest": true, "object": true, "embed": true, "worker": true,
	"sharedworker": true, "serviceworker": true, "audioworklet": true, "paintworklet": true,
	"xslt": true, "report": true,
}

// assetExtensions are the file name extensions taken for assets when the browser does not say
// (no Sec-Fetch-Dest).
var assetExtensions = map[string]bool{
	".ico": true, ".css": true, ".js": true, ".mjs": true, ".map": true, ".png": true, ".jpg": true,
	".jpeg": true, ".gif": true, ".svg": true, ".webp": true, ".avif": true, ".woff": true,
	".woff2": true, ".ttf": true, ".otf": true, ".eot": true, ".mp3": true, ".mp4": true, ".webm": true,
}

// isAsset reports whether r asks for a page's resource: by its Sec-Fetch-Dest, else by the
// extension of target (the request's own path, or the original one behind nginx).
func isAsset(r *http.Request, target string) bool {
	if r.Header.Get(PollHeader) != "" {
		return false
	}
	if dest := r.Header.Get("Sec-Fetch-Dest"); dest != "" {
		return assetDestinations[dest]
	}
	p, _, _ := strings.Cut(target, "?")
	return assetExtensions[strings.ToLower(path.Ext(p))]
}

// notAdmittedAsset answers an asset request of a visitor without a pass: it is not served and
// puts nobody in line.
func (c *Client) notAdmittedAsset(w http.ResponseWriter) {
	retryAfter(w, c.cfg.PollInterval)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte("waiting room: this resource is served to admitted visitors only\n"))
}
