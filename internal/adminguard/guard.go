// Package adminguard keeps web pages from driving an HTTP API that trusts its network position,
// such as Sluice's admin listener on loopback without an admin token.
//
// A page a developer visits can reach 127.0.0.1 in two ways, and each check closes one:
//
//   - DNS rebinding: the page's own name (evil.example) is made to resolve to 127.0.0.1, so the
//     browser sends same-origin requests, with Host: evil.example, and reads the answers.
//     Serving only loopback Host names (localhost, 127.0.0.1, [::1]) refuses them.
//   - Cross-site requests: a form or fetch from evil.example to http://127.0.0.1:7778 is sent
//     (the page cannot read the answer, but the request has its effect). Browsers name the page
//     in Origin, so a foreign Origin is refused; and since a page may send only the "simple"
//     content types without asking the server first, a request that changes state must carry
//     application/json (which needs a CORS preflight Sluice never grants) or a form encoding,
//     never text/plain or a body with no type.
//
// A third way in is Sluice itself: a callback (of a job, or a task's completion callback) is a
// request whose URL a client chose, and a namespace allowed to reach private addresses could aim
// one at the admin listener. Every callback carries the Standard Webhooks header webhook-id, so
// a request with it is refused, whatever its address or name.
//
// Tools (curl, Prometheus, the lmstfy admin scripts, Sluice's CLI) send no Origin, no webhook-id
// and a loopback Host, so they pass.
package adminguard

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Reason says which check refused a request.
type Reason string

// The checks.
const (
	// HostRefused: the Host is not a loopback name (DNS rebinding).
	HostRefused Reason = "host"
	// OriginRefused: the request comes from a web page of another origin.
	OriginRefused Reason = "origin"
	// ContentTypeRefused: a state-changing request whose body a web page could send cross-site.
	ContentTypeRefused Reason = "content_type"
	// CallbackRefused: a callback Sluice sent (it carries webhook-id).
	CallbackRefused Reason = "callback"
)

// webhookIDHeader is the Standard Webhooks header every callback Sluice sends carries (package
// callback's HeaderWebhookID, which this ground-floor package cannot import).
const webhookIDHeader = "webhook-id"

// Refusal is why a request is refused, with a message for the person who sent it.
type Refusal struct {
	Reason  Reason
	Message string
}

// Config says which checks apply.
type Config struct {
	// LoopbackHostsOnly serves only the Host names localhost, 127.0.0.1 and [::1] (any port).
	// Sluice sets it when the admin listener has no admin token: the token is what a rebinding
	// page cannot know. Default false.
	LoopbackHostsOnly bool
	// OpenReads are paths whose GET and HEAD skip every check (Prometheus scrapes /metrics under
	// whatever name it was given; a read there changes nothing). Default none.
	OpenReads map[string]bool
	// FormPrefixes are the path prefixes whose state-changing requests may also carry a form
	// (application/x-www-form-urlencoded or multipart/form-data), as lmstfy's admin tools send.
	// Elsewhere only JSON is accepted. Default none.
	FormPrefixes []string
}

// Check returns why r must be refused, or nil when it may be served.
func Check(r *http.Request, cfg Config) *Refusal {
	if _, ok := r.Header[http.CanonicalHeaderKey(webhookIDHeader)]; ok {
		return &Refusal{CallbackRefused, "a callback (it carries " + webhookIDHeader + ") may not call the admin API: " +
			"point callbacks at your own receivers"}
	}
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
	if safe && cfg.OpenReads[r.URL.Path] {
		return nil
	}
	if cfg.LoopbackHostsOnly && !LoopbackHost(r.Host) {
		return &Refusal{HostRefused, fmt.Sprintf("Host %q is not a loopback name: without an admin token the admin API "+
			"answers only localhost, 127.0.0.1 and [::1], so a web page cannot reach it by DNS rebinding "+
			"(set an admin token to serve other names)", r.Host)}
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		return &Refusal{OriginRefused, fmt.Sprintf("Origin %q is not this listener's own (%s): the admin API "+
			"refuses requests sent by web pages of other sites", origin, ownOrigin(r))}
	}
	if !safe {
		if msg := contentTypeProblem(r, cfg.formsAllowed(r.URL.Path)); msg != "" {
			return &Refusal{ContentTypeRefused, msg}
		}
	}
	return nil
}

// LoopbackHost reports whether a Host header value names the local machine: localhost,
// 127.0.0.1 or [::1], with or without a port.
func LoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		h = host[1 : len(host)-1]
	}
	return strings.EqualFold(h, "localhost") || h == "127.0.0.1" || h == "::1"
}

// ownOrigin is the origin a page served by this listener under r's Host would have.
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// sameOrigin reports whether origin names this listener as the request reached it: its host
// (with the port as browsers write it, without a default one) is the request's Host. The scheme
// is not compared: a TLS proxy in front changes it, and no other server can share the listener's
// host and port.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
		return false // includes "null", the origin of sandboxed frames and local files
	}
	return strings.EqualFold(u.Host, r.Host)
}

func (cfg Config) formsAllowed(path string) bool {
	for _, p := range cfg.FormPrefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// contentTypeProblem checks the body type of a state-changing request; "" when it is accepted.
func contentTypeProblem(r *http.Request, forms bool) string {
	want := "application/json"
	if forms {
		want = "application/json or a form encoding"
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
			return "" // no body at all: lmstfy's admin tools send their parameters in the query
		}
		return fmt.Sprintf("%s with a body needs Content-Type: %s (a web page can send an untyped body "+
			"to another site without asking)", r.Method, want)
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
	case mt == "application/json", strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"):
		return ""
	case forms && (mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data"):
		return "" // lmstfy's admin routes take their parameters as forms
	}
	return fmt.Sprintf("Content-Type %q is not accepted on %s %s: send %s (a web page can send %s to "+
		"another site without asking; with curl -d, add -H 'Content-Type: application/json')", ct, r.Method, r.URL.Path, want, ct)
}
