package waitroom

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HandlerConfig configures the public handlers.
type HandlerConfig struct {
	// WriteError renders the handlers' errors. Default WriteError (the Sluice error shape).
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
}

// Handler serves a Client's public routes, for the nginx auth_request deployment and for apps that
// poll themselves:
//
//	GET  /v1/rooms/{room}/status    the visitor's status as JSON (joins the line, heartbeat)
//	GET  /v1/rooms/{room}/check     nginx auth_request: 200 with the pass refreshed, else 401
//	POST /v1/rooms/{room}/release   the visitor leaves: its slot is freed at once
//	GET  /v1/rooms/{room}/wait      the waiting page; ?next=/path (or the Sluice-Room-Next
//	                                header) is where it leads once admitted
//	GET  /v1/rooms/jwks.json        the public keys of token passes (Config.PassTokenKeys)
type Handler struct {
	c          *Client
	writeError func(http.ResponseWriter, *http.Request, error)
}

// Handler returns the public handlers of c.
func (c *Client) Handler(cfg HandlerConfig) *Handler {
	if cfg.WriteError == nil {
		cfg.WriteError = WriteError
	}
	return &Handler{c: c, writeError: cfg.WriteError}
}

// Register mounts the routes on mux, their errors rendered by HandlerConfig.WriteError.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle("GET /v1/rooms/{room}/status", h.adapt(h.Status))
	mux.Handle("GET /v1/rooms/{room}/check", h.adapt(h.Check))
	mux.Handle("POST /v1/rooms/{room}/release", h.adapt(h.Release))
	mux.Handle("GET /v1/rooms/{room}/wait", h.adapt(h.Wait))
	mux.Handle("GET "+JWKSPath, h.adapt(h.JWKS))
}

func (h *Handler) adapt(fn func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
}

// Status, Check, Release and Wait serve the routes one by one, for a router of one's own: each
// reads the room name from the path value "room" and returns its error for the caller to render
// (ErrorCode says the status and code).
func (h *Handler) Status(w http.ResponseWriter, r *http.Request) error {
	return h.serve(w, r, h.status)
}

// Check is GET /v1/rooms/{room}/check; see Status.
func (h *Handler) Check(w http.ResponseWriter, r *http.Request) error { return h.serve(w, r, h.check) }

// Release is POST /v1/rooms/{room}/release; see Status.
func (h *Handler) Release(w http.ResponseWriter, r *http.Request) error {
	return h.serve(w, r, h.release)
}

// Wait is GET /v1/rooms/{room}/wait; see Status.
func (h *Handler) Wait(w http.ResponseWriter, r *http.Request) error { return h.serve(w, r, h.wait) }

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, fn func(http.ResponseWriter, *http.Request, *Room) error) error {
	room, err := h.c.Room(r.PathValue("room"))
	if err != nil {
		return &HTTPError{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error()}
	}
	return fn(w, r, room)
}

// NextHeader names, on a request for the waiting page, the URL the visitor asked for (what nginx
// sets when it serves the page in place of a page the visitor may not see yet); it takes the
// place of the next query parameter.
const NextHeader = "Sluice-Room-Next"

// StatusURL is the path of a room's status route.
func StatusURL(room string) string { return "/v1/rooms/" + url.PathEscape(room) + "/status" }

// WaitURL is the path of a room's waiting page leading to next.
func WaitURL(room, next string) string {
	return "/v1/rooms/" + url.PathEscape(room) + "/wait?next=" + url.QueryEscape(next)
}

func tooManyPolls(w http.ResponseWriter, retry time.Duration) error {
	retryAfter(w, retry)
	return &HTTPError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, RetryAfter: retry,
		Message: "too many status polls from this visitor; poll at most as often as poll_after_ms says"}
}

func (h *Handler) status(w http.ResponseWriter, r *http.Request, room *Room) error {
	c := h.c
	if p, ok := room.requestPass(r); ok {
		if held, pass, exp, err := room.touch(r.Context(), p.Visitor, p.Binding); err != nil {
			return err
		} else if held {
			if pass != "" {
				c.setPass(w, r, room.name, pass, exp)
			}
			writeJSON(w, http.StatusOK, c.statusJSON(Status{Room: room.name, Visitor: p.Visitor, State: Admitted}))
			return nil
		}
		c.clearPass(w, r, room.name)
	}
	if c.hasLeft(r, room.name) {
		writeJSON(w, http.StatusOK, c.statusJSON(Status{Room: room.name, State: Left}))
		return nil
	}
	st, pollLimited, err := c.admission(w, r, room)
	if err != nil {
		return err
	}
	if pollLimited {
		return tooManyPolls(w, st.RetryAfter)
	}
	if st.Pass != "" {
		c.setPass(w, r, room.name, st.Pass, st.PassExpires)
	}
	code := statusCode(st, http.StatusOK)
	switch st.State {
	case Unavailable:
		retryAfter(w, c.cfg.PollInterval)
	case Limited:
		retryAfter(w, st.RetryAfter)
	}
	writeJSON(w, code, c.statusJSON(st))
	return nil
}

// check is the nginx auth_request endpoint. nginx passes the visitor's cookies; a 200 lets the
// request through (copy the Set-Cookie of the answer with auth_request_set to keep the pass
// fresh), a 401 sends the visitor to the waiting page.
func (h *Handler) check(w http.ResponseWriter, r *http.Request, room *Room) error {
	c := h.c
	if room.bypassed(r, r.Header.Get(NextHeader)) {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	if p, ok := room.requestPass(r); ok {
		held, pass, exp, err := room.touch(r.Context(), p.Visitor, p.Binding)
		if err != nil {
			return err
		}
		if held {
			if pass != "" {
				c.setPass(w, r, room.name, pass, exp)
			}
			c.checkPassed(w, r, room.name, p.Visitor)
			return nil
		}
		c.clearPass(w, r, room.name)
	}
	// Only a visitor the waiting page already knows is let in from here (admission: a request
	// without a visitor cookie puts nobody in line). An asset request or a browser that has just
	// left puts nobody in line either.
	if isAsset(r, r.Header.Get(NextHeader)) || c.hasLeft(r, room.name) {
		w.WriteHeader(http.StatusUnauthorized)
		return nil
	}
	st, _, err := c.admission(w, r, room)
	if err != nil {
		return err
	}
	if st.State != Admitted {
		w.WriteHeader(http.StatusUnauthorized)
		return nil
	}
	if st.Pass != "" {
		c.setPass(w, r, room.name, st.Pass, st.PassExpires)
	}
	c.checkPassed(w, r, room.name, st.Visitor)
	return nil
}

// checkPassed answers the check of a visitor let through: 200, with the left cookie nginx hands
// to the browser if the app's answer releases the visitor (LeftHeader).
func (c *Client) checkPassed(w http.ResponseWriter, r *http.Request, room, visitor string) {
	w.Header().Set(LeftHeader, c.leftCookieOf(r, room, visitor).String())
	w.WriteHeader(http.StatusOK)
}

func (h *Handler) release(w http.ResponseWriter, r *http.Request, room *Room) error {
	c := h.c
	visitor := c.knownVisitor(r)
	if p, ok := room.requestPass(r); ok {
		visitor = p.Visitor
	}
	c.clearPass(w, r, room.name)
	released := false
	if visitor != "" {
		c.setLeft(w, r, room.name, visitor)
		var err error
		if released, err = room.Release(r.Context(), visitor); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]bool{"released": released})
	return nil
}

func (h *Handler) wait(w http.ResponseWriter, r *http.Request, room *Room) error {
	c := h.c
	next := r.URL.Query().Get("next")
	if h := r.Header.Get(NextHeader); h != "" {
		next = h
	}
	next = safeNext(next)
	if _, ok := room.requestPass(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // G710: next went through safeNext (a path on this site only)
		return nil
	}
	self := safeNext(r.URL.RequestURI()) // the page leads here once admitted: never off the site
	if isAsset(r, next) {
		c.notAdmittedAsset(w)
		return nil
	}
	// The URL the browser shows the page at: behind nginx, which serves it in place of the page
	// asked for, that page's; else the wait route's, with the checked next.
	page, asked := WaitURL(room.name, next), self
	if r.Header.Get(NextHeader) != "" {
		page, asked = next, next
	}
	if c.switchLanguage(w, r, asked) {
		return nil
	}
	if c.hasLeft(r, room.name) {
		c.renderPage(w, r, room, http.StatusOK, Status{Room: room.name, State: Left}, Left.String(), page, StatusURL(room.name), next)
		return nil
	}
	st, pollLimited, err := c.admission(w, r, room)
	if err != nil {
		return err
	}
	switch {
	case pollLimited:
		retryAfter(w, st.RetryAfter)
		c.renderPage(w, r, room, http.StatusTooManyRequests, Status{Room: room.name}, "limited", page, StatusURL(room.name), self)
	case st.State == Admitted:
		if st.Pass != "" {
			c.setPass(w, r, room.name, st.Pass, st.PassExpires)
		}
		http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // G710: next went through safeNext (a path on this site only)
	case st.State == Unavailable:
		retryAfter(w, c.cfg.PollInterval)
		c.renderPage(w, r, room, http.StatusServiceUnavailable, st, "unavailable", page, StatusURL(room.name), self)
	default:
		if st.State == Limited {
			retryAfter(w, st.RetryAfter)
		}
		c.renderPage(w, r, room, statusCode(st, http.StatusOK), st, st.State.String(), page, StatusURL(room.name), next)
	}
	return nil
}

// safeNext keeps next only when it is a path on this site, so the waiting page cannot be used to
// send visitors elsewhere.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

// wantsJSON reports whether the request asks for JSON rather than a page.
func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}
