package ui

import (
	"net"
	"net/http"
)

// defaultPublicPort is the public API's port when the server does not say (Config.PublicAddr).
const defaultPublicPort = "7777"

// publicURL is the base URL of the public API as the dashboard's user can reach it, for the
// hints with a curl line: the address the public listener is bound to, with the host the
// dashboard was reached by when that address names no host (":7777", "0.0.0.0:7777", "[::]:7777").
// The Host header is one the admin listener accepted, and the page escapes it like any text.
func (u *UI) publicURL(r *http.Request) string {
	addr := ""
	if u.cfg.PublicAddr != nil {
		addr = u.cfg.PublicAddr()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = "", defaultPublicPort
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
