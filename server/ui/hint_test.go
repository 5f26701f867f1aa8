package ui

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The hint's URL is the public listener's address; a listener bound to every interface (or an
// address the server does not know) takes the host the dashboard was reached by.
func TestPublicURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr, host, want string
		known            bool
	}{
		{"10.0.0.5:7777", "dash.example:7778", "http://10.0.0.5:7777", true},
		{"127.0.0.1:9100", "localhost:7778", "http://127.0.0.1:9100", true},
		{":7777", "dash.example:7778", "http://dash.example:7777", true},
		{"0.0.0.0:9000", "dash.example", "http://dash.example:9000", true},
		{"[::]:9000", "[::1]:7778", "http://[::1]:9000", true},
		{"", "dash.example:7778", "http://dash.example:7777", false},
	} {
		u := &UI{}
		if c.known {
			u.cfg.PublicAddr = func() string { return c.addr }
		}
		r := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		r.Host = c.host
		if got := u.publicURL(r); got != c.want {
			t.Errorf("public address %q, Host %q: %q, want %q", c.addr, c.host, got, c.want)
		}
	}
}
