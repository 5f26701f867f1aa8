package server

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// proxies are the reverse proxies the server believes (Config.TrustedProxies).
type proxies []netip.Prefix

// parseProxies reads "10.0.0.0/8, 127.0.0.1, ::1": addresses and CIDR ranges, comma-separated.
func parseProxies(s string) (proxies, error) {
	var out proxies
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not an IP address or a CIDR range (10.0.0.0/8, 127.0.0.1, ::1)", part)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	if len(s) > 0 && len(out) == 0 {
		return nil, fmt.Errorf("no address in %q", s)
	}
	return out, nil
}

func (p proxies) trusts(a netip.Addr) bool {
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// client returns the address of a request's client and whether the client's connection was TLS.
// Without trusted proxies, or from a connection of another address, that is the connection's
// address and its TLS, whatever the request's headers say. From a trusted proxy it is the
// nearest address in X-Forwarded-For (read from the right: each proxy appends the address it was
// connected from) that is not a trusted proxy itself, and X-Forwarded-Proto's last value decides
// https.
func (p proxies) client(r *http.Request) (netip.Addr, bool) {
	var peer netip.Addr
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		peer = ap.Addr().Unmap()
	}
	https := r.TLS != nil
	if len(p) == 0 || !p.trusts(peer) {
		return peer, https
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
walk:
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				break walk // garbage left of a proxy's entry: the client is the last good hop
			}
			client = a.Unmap()
			if !p.trusts(client) {
				break walk
			}
		}
	}
	if protos := r.Header.Values("X-Forwarded-Proto"); len(protos) > 0 {
		last := protos[len(protos)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		https = strings.EqualFold(strings.TrimSpace(last), "https")
	}
	return client, https
}

// clientAddr is the client address of a request as the waiting rooms count arrivals by it
// (waitroom.Config.ClientAddr): the trusted proxies' view, as everywhere in the server.
func (s *Server) clientAddr(r *http.Request) string {
	a, _ := s.proxies.client(r)
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
