package server

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestClientAddress(t *testing.T) {
	t.Parallel()
	trusted, err := parseProxies("10.0.0.0/8, 127.0.0.1, ::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		proxies proxies
		remote  string
		xff     []string
		proto   []string
		tls     bool
		client  string
		https   bool
	}{
		{"no proxies: headers ignored", nil, "203.0.113.1:5000", []string{"198.51.100.1"}, []string{"https"}, false, "203.0.113.1", false},
		{"TLS to the server itself", nil, "203.0.113.1:5000", nil, nil, true, "203.0.113.1", true},
		{"an untrusted peer's headers are ignored", trusted, "203.0.113.1:5000", []string{"198.51.100.1"}, []string{"https"}, false, "203.0.113.1", false},
		{"from a trusted proxy", trusted, "127.0.0.1:5000", []string{"198.51.100.1"}, []string{"https"}, false, "198.51.100.1", true},
		{"the nearest untrusted hop wins over forged ones", trusted, "127.0.0.1:5000", []string{"1.1.1.1, 2.2.2.2", "198.51.100.1, 10.1.2.3"}, nil, false, "198.51.100.1", false},
		{"a proxy without X-Forwarded-For is the client", trusted, "10.0.0.5:5000", nil, nil, false, "10.0.0.5", false},
		{"garbage stops the walk at the last good hop", trusted, "127.0.0.1:5000", []string{"evil, 10.9.9.9"}, nil, false, "10.9.9.9", false},
		{"the proxy's X-Forwarded-Proto is the last one", trusted, "127.0.0.1:5000", nil, []string{"https", "http"}, false, "127.0.0.1", false},
		{"X-Forwarded-Proto in one header, last wins", trusted, "127.0.0.1:5000", nil, []string{"http, https"}, false, "127.0.0.1", true},
		{"IPv6 proxy and client", trusted, "[::1]:5000", []string{"2001:db8::7"}, []string{"HTTPS"}, false, "2001:db8::7", true},
		{"an IPv4-mapped peer", trusted, "[::ffff:127.0.0.1]:5000", []string{"198.51.100.2"}, nil, false, "198.51.100.2", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		for _, v := range c.proto {
			r.Header.Add("X-Forwarded-Proto", v)
		}
		if c.tls {
			r.TLS = &tls.ConnectionState{}
		}
		client, https := c.proxies.client(r)
		if client.String() != c.client || https != c.https {
			t.Errorf("%s: client %s https %v, want %s %v", c.name, client, https, c.client, c.https)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "fe80::1%eth0", " , "} {
		if _, err := parseProxies(bad); err == nil {
			t.Errorf("parseProxies(%q) accepted", bad)
		}
	}
}
