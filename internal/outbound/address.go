package outbound

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrDestinationRefused is the error (wrapped) of a call whose destination Sluice will not reach:
// a special-purpose address while Config.AllowPrivate is false. Such a call is final; retrying it
// cannot succeed.
var ErrDestinationRefused = errors.New("outbound: destination refused")

// special lists the address ranges a call may not reach unless Config.AllowPrivate is set, each with
// the word an error uses for it. The IANA special-purpose registries are the source; ranges that
// embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are unwrapped and checked as IPv4 instead.
var special = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},  // includes 255.255.255.255
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"}, // includes :: and ::1 (checked first below)
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToFo = netip.MustParsePrefix("2002::/16")
)

// refusedKind says why ip may not be called ("loopback", "private", ...), or "" when it is a
// public address. IPv4 addresses carried inside IPv6 ones are judged as the IPv4 address they reach.
func refusedKind(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		b := ip.As16()
		switch {
		case ip.IsUnspecified():
			return "unspecified"
		case ip.IsLoopback():
			return "loopback"
		case nat64.Contains(ip):
			return refusedKind(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFo.Contains(ip):
			return refusedKind(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.kind
		}
	}
	return ""
}

// CheckAddr returns an error wrapping ErrDestinationRefused when ip is an address a call may not
// reach without Config.AllowPrivate, and nil for a public address.
func CheckAddr(ip netip.Addr) error {
	if kind := refusedKind(ip); kind != "" {
		return fmt.Errorf("%w: %s is a %s address", ErrDestinationRefused, ip, kind)
	}
	return nil
}

// dialControl is the net.Dialer.Control of a Sender that refuses special addresses. It runs for
// every address the dialer tries, after name resolution, so it judges the address actually
// connected to, never the name in the URL.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dialled address %q", ErrDestinationRefused, address)
	}
	return CheckAddr(ap.Addr())
}

// CheckURLHost says in advance whether calls to rawURL would be refused: it returns an error
// wrapping ErrDestinationRefused when rawURL's host is a literal address a call may not reach
// without Config.AllowPrivate, or a name (localhost included) whose every address is one. It is
// for configuration, which can then refuse a destination with a clear message instead of every
// call failing later; the Sender still judges each address it dials (a name may change its
// answer). A name that does not resolve (within 2 s) is not refused: it may resolve later. With a
// name that resolves to public and private addresses, calls reach the public ones.
func CheckURLHost(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return nil // not a URL: its own check says so
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return CheckAddr(ip)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil
	}
	var first error
	for _, ip := range ips {
		err := CheckAddr(ip)
		if err == nil {
			return nil
		}
		first = cmp.Or(first, err)
	}
	return fmt.Errorf("%w (%s resolves to it)", first, host)
}
