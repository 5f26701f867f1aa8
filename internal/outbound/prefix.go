package outbound

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// UnderPrefix reports whether rawURL lies under one of the prefixes: the same scheme, the same host
// (case-insensitive, a trailing dot ignored) on the same port (the scheme's default port when none
// is written), and a path equal to the prefix's path or below it at a segment boundary
// ("https://a.com/api" admits /api and /api/x, not /apix). This is the rule that keeps the request
// queue and callbacks from being an open relay: a caller names a destination, and only
// destinations under an operator's prefixes are called.
//
// It is strict on purpose. URLs with userinfo are refused (they are a classic way to make a URL
// look like it goes where it does not); paths are compared after "." and ".." segments are
// resolved, both percent-decoded and as written, so "/api/../admin" and "/api/%2e%2e/admin" are
// not under "/api". Queries and fragments are ignored. A prefix that is not an absolute http or
// https URL matches nothing.
func UnderPrefix(rawURL string, prefixes ...string) bool {
	u, ok := parseTarget(rawURL)
	if !ok {
		return false
	}
	for _, p := range prefixes {
		pu, ok := parseTarget(p)
		if ok && u.under(pu) {
			return true
		}
	}
	return false
}

// Prefixes are prefixes parsed once, for matching many URLs against them: Match parses the URL
// once and compares it with each, where UnderPrefix parses every prefix again at every call.
type Prefixes struct {
	list []target
	ok   []bool // false: the prefix is not usable and matches nothing
}

// ParsePrefixes parses prefixes for Match. A prefix that is not an absolute http or https URL
// matches nothing, as with UnderPrefix.
func ParsePrefixes(prefixes []string) Prefixes {
	p := Prefixes{list: make([]target, len(prefixes)), ok: make([]bool, len(prefixes))}
	for i, raw := range prefixes {
		p.list[i], p.ok[i] = parseTarget(raw)
	}
	return p
}

// Match returns the index of the first prefix rawURL is under (by UnderPrefix's rule), or -1.
func (p Prefixes) Match(rawURL string) int {
	if len(p.list) == 0 {
		return -1
	}
	u, ok := parseTarget(rawURL)
	if !ok {
		return -1
	}
	for i, pu := range p.list {
		if p.ok[i] && u.under(pu) {
			return i
		}
	}
	return -1
}

// under reports whether t lies under the prefix pu.
func (t target) under(pu target) bool {
	return t.scheme == pu.scheme && t.host == pu.host && t.port == pu.port &&
		underPath(t.path, pu.path) && underPath(t.escaped, pu.escaped)
}

// target is a URL reduced to what UnderPrefix compares.
type target struct {
	scheme, host, port string
	path, escaped      string // cleaned, decoded and as written
}

func parseTarget(raw string) (target, bool) {
	t, err := parseTargetErr(raw)
	return t, err == nil
}

// CheckPrefix returns an error saying why p cannot serve as a prefix (an endpoint's target URL, a
// callback destination), or nil. UnderPrefix ignores such prefixes; configuration should refuse
// them with this error.
func CheckPrefix(p string) error {
	_, err := parseTargetErr(p)
	return err
}

func parseTargetErr(raw string) (target, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return target{}, fmt.Errorf("outbound: url %q: %w", raw, err)
	case u.Opaque != "" || u.Scheme == "":
		return target{}, fmt.Errorf("outbound: url %q is not absolute", raw)
	case u.User != nil:
		return target{}, fmt.Errorf("outbound: url %q must not carry userinfo", raw)
	case strings.Contains(raw, `\`):
		return target{}, fmt.Errorf("outbound: url %q must not contain a backslash", raw)
	}
	scheme := strings.ToLower(u.Scheme)
	var defaultPort string
	switch scheme {
	case "http":
		defaultPort = "80"
	case "https":
		defaultPort = "443"
	default:
		return target{}, fmt.Errorf("outbound: url %q: scheme must be http or https", raw)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return target{}, fmt.Errorf("outbound: url %q has no host", raw)
	}
	port := u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return target{}, fmt.Errorf("outbound: url %q has an empty port", raw)
		}
		port = defaultPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strings.HasPrefix(port, "0") {
		return target{}, fmt.Errorf("outbound: url %q: port must be 1-65535 without leading zeros", raw)
	}
	return target{
		scheme:  scheme,
		host:    host,
		port:    port,
		path:    cleanPath(u.Path),
		escaped: cleanPath(u.EscapedPath()),
	}, nil
}

func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	return path.Clean("/" + p)
}

// underPath reports whether the cleaned path p equals prefix or lies below it at a "/" boundary.
func underPath(p, prefix string) bool {
	if prefix == "/" {
		return true
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// UnderPath reports whether a request's path (as the request line carries it: percent-encoded,
// with or without a query) equals prefix or lies below it at a segment boundary, by UnderPrefix's
// rule: "." and ".." segments resolved, both percent-decoded and as written, so that
// "/api/../admin" and "/api/%2e%2e/admin" are not under "/api" whatever the server behind the
// check makes of them. A path that is not absolute, holds a backslash (encoded or not) or a
// malformed escape is under nothing.
func UnderPath(requestPath, prefix string) bool {
	p, _, _ := strings.Cut(requestPath, "?")
	if !strings.HasPrefix(p, "/") || !strings.HasPrefix(prefix, "/") {
		return false
	}
	decoded, err := url.PathUnescape(p)
	if err != nil || strings.Contains(decoded, `\`) {
		return false
	}
	pre := cleanPath(prefix)
	return underPath(cleanPath(decoded), pre) && underPath(cleanPath(p), pre)
}

// CheckPathPrefix returns an error saying why p cannot serve as a path prefix for UnderPath, or
// nil: it must be an absolute path written the way UnderPath compares paths (no dot segments,
// doubled or trailing slash, query, fragment, backslash, escape or control character).
func CheckPathPrefix(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("outbound: path prefix %q must start with /", p)
	case strings.ContainsAny(p, "?#%\\"):
		return fmt.Errorf("outbound: path prefix %q must not hold ?, #, %% or a backslash", p)
	case strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("outbound: path prefix %q must not hold spaces or control characters", p)
	case cleanPath(p) != p:
		return fmt.Errorf("outbound: path prefix %q is not clean (want %q: no dot segments, doubled or trailing slash)", p, cleanPath(p))
	}
	return nil
}
