package waitroom_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// TestNginxBoundTokenPass runs token passes bound to the visitor cookie in deployment c: behind
// nginx's auth_request, an admitted visitor's copied pass admits nobody else (neither a client
// with no cookie nor another visitor), while its owner keeps going through.
func TestNginxBoundTokenPass(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, env, waitroom.Config{PassTokenKeys: []ed25519.PrivateKey{key}, BindPasses: true})
	site := nginxSite(t, c, waitroom.RoomConfig{MaxActive: 1}) // bob, once in line, waits: only a pass could let him through

	alice, bob := browser(t), browser(t)
	if r := do(t, alice, "GET", site+"/products", nil); r.code != 200 || !strings.Contains(r.body, "the upstream page /products") {
		t.Fatalf("alice's arrival: %d %q", r.code, r.body)
	}
	siteURL, _ := url.Parse(site)
	var pass string
	for _, ck := range alice.Jar.Cookies(siteURL) {
		if ck.Name == "sluice_pass_shop" {
			pass = ck.Value
		}
	}
	if strings.Count(pass, ".") != 2 {
		t.Fatalf("alice's pass is no JWT: %q", pass)
	}
	// Bob gets his visitor cookie (he is not in line yet: the first answer only hands it out).
	if r := doOnce(t, bob, "GET", site+"/cart", nil); !strings.Contains(r.header.Get("Set-Cookie"), "sluice_visitor=") {
		t.Fatalf("bob's first answer: %d %v", r.code, r.header)
	}
	copied := map[string]string{"Cookie": "sluice_pass_shop=" + pass}
	for name, client := range map[string]*http.Client{"a client with no cookie": {}, "bob": bob} {
		if r := doOnce(t, client, "GET", site+"/checkout", copied); strings.Contains(r.body, "upstream page") {
			t.Errorf("%s with alice's copied pass got through nginx: %d %q", name, r.code, r.body)
		}
	}
	if r := do(t, alice, "GET", site+"/checkout", nil); r.code != 200 || !strings.Contains(r.body, "the upstream page /checkout") {
		t.Fatalf("alice after her pass was copied: %d %q", r.code, r.body)
	}
}
