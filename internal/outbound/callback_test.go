package outbound_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

func TestCheckCallback(t *testing.T) {
	t.Parallel()
	if got, err := outbound.CheckCallback("https://a.com/hook", map[string]string{"X-Tenant": "acme"}, 0); err != nil || got != outbound.DefaultCallbackTimeout {
		t.Fatalf("a good callback: %s, %v; want the default timeout", got, err)
	}
	for _, c := range []struct {
		name, url string
		header    map[string]string
		timeout   time.Duration
		part      string
	}{
		{"no url", "", nil, 0, "url"},
		{"long url", "https://a.com/" + strings.Repeat("x", outbound.MaxCallbackURL), nil, 0, "url"},
		{"not http", "file:///etc/passwd", nil, 0, "url"},
		{"userinfo", "https://u:p@a.com/x", nil, 0, "url"},
		{"signature header", "https://a.com", map[string]string{"Webhook-Signature": "v1,forged"}, 0, "headers"},
		{"host header", "https://a.com", map[string]string{"host": "internal"}, 0, "headers"},
		{"header name", "https://a.com", map[string]string{"a b": "x"}, 0, "headers"},
		{"line break", "https://a.com", map[string]string{"X": "a\r\nB: c"}, 0, "headers"},
		{"negative timeout", "https://a.com", nil, -time.Second, "timeout"},
		{"long timeout", "https://a.com", nil, outbound.MaxCallbackTimeout + time.Second, "timeout"},
	} {
		_, err := outbound.CheckCallback(c.url, c.header, c.timeout)
		var ce *outbound.CallbackError
		if !errors.As(err, &ce) || ce.Part != c.part {
			t.Fatalf("%s: %v, want a refusal of callback.%s", c.name, err, c.part)
		}
	}
}
