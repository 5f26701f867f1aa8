package outbound

import (
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
		if !ok {
			continue
		}
		if u.scheme == pu.scheme && u.host == pu.host && u.port == pu.port &&
			underPath(u.path, pu.path) && underPath(u.escaped, pu.escaped) {
			return true
		}
	}
	return false
}

// target is a URL reduced to what UnderPrefix compares.
type target struct {
	scheme, host, port string
	path, escaped      string // cleaned, decoded and as written
}

func parseTarget(raw string) (target, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || strings.Contains(raw, `\`) {
		return target{}, false
	}
	scheme := strings.ToLower(u.Scheme)
	var defaultPort string
	switch scheme {
	case "http":
		defaultPort = "80"
	case "https":
		defaultPort = "443"
	default:
		return target{}, false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return target{}, false
	}
	port := u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return target{}, false // "a.com:" names no port; refuse rather than guess
		}
		port = defaultPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strings.HasPrefix(port, "0") {
		return target{}, false
	}
	return target{
		scheme:  scheme,
		host:    host,
		port:    port,
		path:    cleanPath(u.Path),
		escaped: cleanPath(u.EscapedPath()),
	}, true
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
