package outbound_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/sluicehq/sluice/internal/outbound"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	refused := []string{
		"127.0.0.1", "127.1.2.3", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1",
		"198.18.0.1", "192.0.0.170",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
		"fe80::1", "fe80::1%eth0", "fc00::1", "fd00:ec2::254", "ff02::1", "fec0::1",
		"64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:7f00:1::1", "2002:a9fe:a9fe::", "2001:db8::1", "2001::1",
	}
	allowed := []string{
		"1.1.1.1", "8.8.8.8", "93.184.216.34", "172.32.0.1", "100.128.0.1", "::ffff:8.8.8.8",
		"2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1",
	}
	for _, s := range refused {
		if err := outbound.CheckAddr(netip.MustParseAddr(s)); !errors.Is(err, outbound.ErrDestinationRefused) {
			t.Errorf("%s: err = %v, want refused", s, err)
		}
	}
	for _, s := range allowed {
		if err := outbound.CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: %v, want allowed", s, err)
		}
	}
}

// CheckURLHost refuses a URL whose host is, or only resolves to, an address a call may not reach,
// and lets a public one (or a name that does not resolve) through.
func TestCheckURLHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:9/x", "https://[::1]/", "http://10.0.0.7/api", "http://169.254.169.254/latest", "http://localhost:8080/"} {
		if err := outbound.CheckURLHost(ctx, u); !errors.Is(err, outbound.ErrDestinationRefused) {
			t.Errorf("%s: %v, want refused", u, err)
		}
	}
	for _, u := range []string{"https://93.184.216.34/", "https://[2606:4700:4700::1111]/", "https://name.invalid/", "not a url"} {
		if err := outbound.CheckURLHost(ctx, u); err != nil {
			t.Errorf("%s: %v, want allowed", u, err)
		}
	}
}
