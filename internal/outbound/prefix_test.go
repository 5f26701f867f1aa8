package outbound_test

import (
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/outbound"
)

func TestUnderPrefix(t *testing.T) {
	t.Parallel()
	const api = "https://a.com/api"
	for _, tc := range []struct {
		url    string
		prefix string
		want   bool
	}{
		{"https://a.com/api", api, true},
		{"https://a.com/api/", api, true},
		{"https://a.com/api/x/y?q=1#f", api, true},
		{"https://A.COM/api/x", api, true},
		{"HTTPS://a.com/api/x", api, true},
		{"https://a.com:443/api/x", api, true},
		{"https://a.com./api/x", api, true},
		{"https://a.com/api/./x", api, true},
		{"https://a.com/api/x/../y", api, true},
		{"https://a.com/apix", api, false},
		{"https://a.com/ap", api, false},
		{"https://a.com/", api, false},
		{"https://a.com", api, false},
		{"https://a.com/API/x", api, false}, // paths are case-sensitive
		{"http://a.com/api/x", api, false},
		{"https://a.com:8443/api/x", api, false},
		{"https://a.com.evil/api", api, false},
		{"https://evil.com/a.com/api", api, false},
		{"https://a.com@evil.com/api", api, false},
		{"https://user:pw@a.com/api", api, false},
		{"https://evil.com\\@a.com/api", api, false},
		{"https://a.com/api/../admin", api, false},
		{"https://a.com/api/%2e%2e/admin", api, false},
		{"https://a.com/api%2F..%2Fadmin", api, false},
		{"https://a.com/api/..", api, false},
		{"https://a.com/api/x/../../admin", api, false},
		{"https://sub.a.com/api", api, false},
		{"https://a.com:/api", api, false},
		{"https://a.com:0443/api", api, false},
		{"//a.com/api", api, false},
		{"a.com/api", api, false},
		{"javascript:alert(1)", api, false},
		{"", api, false},
		// Prefix forms.
		{"https://a.com/api/x", "https://a.com/api/", true},
		{"https://a.com/api", "https://a.com/api/", true},
		{"https://a.com/anything", "https://a.com", true},
		{"https://a.com/anything", "https://a.com/", true},
		{"https://a.com:443/x", "https://a.com:443", true},
		{"http://a.com/x", "http://a.com:80/", true},
		{"http://a.com:8080/x", "http://a.com:8080/", true},
		{"http://a.com:8081/x", "http://a.com:8080/", false},
		{"http://[::1]:8080/x", "http://[::1]:8080", true},
		{"http://[::2]:8080/x", "http://[::1]:8080", false},
		{"https://a.com/api/x", "ftp://a.com/api", false},
		{"https://a.com/api/x", "https://u@a.com/api", false},
		{"https://a.com/api/x", "not a url", false},
		{"https://a.com/my%20api/x", "https://a.com/my%20api", true},
	} {
		if got := outbound.UnderPrefix(tc.url, tc.prefix); got != tc.want {
			t.Errorf("UnderPrefix(%q, %q) = %v, want %v", tc.url, tc.prefix, got, tc.want)
		}
		if got := outbound.ParsePrefixes([]string{tc.prefix}).Match(tc.url); (got == 0) != tc.want || (got != 0 && got != -1) {
			t.Errorf("ParsePrefixes(%q).Match(%q) = %d, want %v", tc.prefix, tc.url, got, tc.want)
		}
	}
}

func TestUnderPrefixAnyOfSeveral(t *testing.T) {
	t.Parallel()
	prefixes := []string{"https://a.com/api", "http://b.com:8080/hooks"}
	if !outbound.UnderPrefix("http://b.com:8080/hooks/1", prefixes...) {
		t.Error("second prefix not matched")
	}
	if outbound.UnderPrefix("https://c.com/api") || outbound.UnderPrefix("https://c.com/api", prefixes...) {
		t.Error("matched without a matching prefix")
	}
	// Match names the first prefix that covers the URL; unusable prefixes match nothing.
	ps := outbound.ParsePrefixes([]string{"not a url", "https://a.com/api/v2", "https://a.com/api"})
	for url, want := range map[string]int{
		"https://a.com/api/v2/x": 1, "https://a.com/api/v1": 2, "https://a.com/other": -1, "not a url": -1,
	} {
		if got := ps.Match(url); got != want {
			t.Errorf("Match(%q) = %d, want %d", url, got, want)
		}
	}
	if got := outbound.ParsePrefixes(nil).Match("https://a.com/api"); got != -1 {
		t.Errorf("Match with no prefixes = %d", got)
	}
}

// FuzzUnderPrefix checks that whatever UnderPrefix admits really goes to the prefix's host and path.
func FuzzUnderPrefix(f *testing.F) {
	for _, s := range []string{
		"https://a.com/api/x", "https://a.com/apix", "https://a.com@evil/api", "https://a.com/api/../x",
		"https://a.com/api/%2e%2e/x", "https://A.com:443/api", "https://a.com\\@b/api", "https://a.com/api%2f..",
	} {
		f.Add(s)
	}
	set := outbound.ParsePrefixes([]string{"https://a.com/api"})
	f.Fuzz(func(t *testing.T, raw string) {
		under := outbound.UnderPrefix(raw, "https://a.com/api")
		if (set.Match(raw) == 0) != under {
			t.Fatalf("Match and UnderPrefix disagree on %q", raw)
		}
		if !under {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("admitted an unparsable URL %q", raw)
		}
		if !strings.EqualFold(u.Scheme, "https") || u.User != nil ||
			strings.TrimSuffix(strings.ToLower(u.Hostname()), ".") != "a.com" || (u.Port() != "" && u.Port() != "443") {
			t.Fatalf("admitted %q: scheme %q user %v host %q port %q", raw, u.Scheme, u.User, u.Hostname(), u.Port())
		}
		for _, p := range []string{u.Path, u.EscapedPath()} {
			if c := path.Clean("/" + p); c != "/api" && !strings.HasPrefix(c, "/api/") {
				t.Fatalf("admitted %q whose path %q is not under /api", raw, c)
			}
		}
	})
}

func TestCheckPrefix(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://a.com/api", "http://a.com:8080", "https://[::1]:443/x/"} {
		if err := outbound.CheckPrefix(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"ftp://a.com":          "scheme",
		"https://u:p@a.com/":   "userinfo",
		"https:///x":           "host",
		"/api":                 "absolute",
		"https://a.com:99999/": "port",
		"https://a.com:/":      "port",
		"https://a.com/x\\y":   "backslash",
		"http://a.com/%zz":     "invalid URL escape",
	} {
		if err := outbound.CheckPrefix(bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: err = %v, want one about %s", bad, err, why)
		}
	}
}

// UnderPath judges a request path as UnderPrefix judges a URL's: at a segment boundary, after dot
// segments are resolved both decoded and as written.
func TestUnderPath(t *testing.T) {
	t.Parallel()
	under := []string{"/v1/draw", "/v1/draw/", "/v1/draw/x", "/v1/draw/x?q=../../admin", "/v1/draw/a/../b", "/v1/draw/%41"}
	notUnder := []string{
		"/v1/drawing", "/v1/admin", "/v1", "/", "v1/draw", "", "/v1/draw/../admin", "/v1/draw/%2e%2e/admin",
		"/v1/draw/%2E%2E%2Fadmin", "/v1/draw/..%2fadmin", `/v1/draw/..\admin`, "/v1/draw/..%5Cadmin", "/v1/draw/%zz",
		"/v1/%64raw", "//v1/draw/../../admin",
	}
	for _, p := range under {
		if !outbound.UnderPath(p, "/v1/draw") {
			t.Errorf("%q: not under /v1/draw, want under", p)
		}
	}
	for _, p := range notUnder {
		if outbound.UnderPath(p, "/v1/draw") {
			t.Errorf("%q: under /v1/draw, want not", p)
		}
	}
	if !outbound.UnderPath("/anything", "/") {
		t.Error("/ does not cover /anything")
	}
}

func TestCheckPathPrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/", "/v1", "/v1/draw", "/a-b_c.d/~e"} {
		if err := outbound.CheckPathPrefix(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", "v1", "/v1/", "/v1/../x", "/v1/./x", "//v1", "/v1?x", "/v1#x", "/v%31", `/v1\x`, "/v 1", "/v1\n"} {
		if err := outbound.CheckPathPrefix(p); err == nil {
			t.Errorf("%q: accepted", p)
		}
	}
}
