package server

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server/rooms"
)

// TestRoomTokenPassesTwoServers: two servers with token passes and no configured key agree on one
// key (made once in Redis) and one JWKS, admit each other's visitors through the room's proxy,
// and the upstream checks every request's pass on its own with golang-jwt and the JWKS, refusing
// the pass when it comes without its visitor cookie.
func TestRoomTokenPassesTwoServers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	var keys map[string]ed25519.PublicKey // read from the JWKS before the first visitor comes
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie("sluice_pass_shop")
		if err == nil {
			_, err = jwt.Parse(ck.Value, func(tok *jwt.Token) (any, error) {
				if k, ok := keys[tok.Header["kid"].(string)]; ok {
					return k, nil
				}
				return nil, errors.New("unknown kid")
			}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithAudience("shop"), jwt.WithIssuer("sluice"), jwt.WithExpirationRequired())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, "in")
	}))
	t.Cleanup(app.Close)
	n := 5
	var servers []*testServer
	for range 2 {
		servers = append(servers, newTestServerOn(t, env, func(c *Config) {
			c.ProxyRooms = "*=shop"
			c.RoomPassTokens, c.RoomPassBind = true, true
			c.Rooms = map[string]rooms.RoomJSON{"shop": {MaxActive: &n, Upstream: &app.URL}}
		}))
	}
	sets := make([]string, 2)
	for i, s := range servers {
		r := s.public(t, http.MethodGet, "/v1/rooms/jwks.json", "", nil)
		wantStatus(t, r, http.StatusOK, "")
		sets[i] = string(r.Body)
	}
	if sets[0] != sets[1] {
		t.Fatalf("the servers publish different keys:\n%s\n%s", sets[0], sets[1])
	}
	keys = parseJWKS(t, sets[0])
	if len(keys) != 1 {
		t.Fatalf("JWKS %s: want one key", sets[0])
	}

	v := newVisitor(t)
	if r := v.do(t, http.MethodGet, servers[0].PublicURL+"/", nil); r.Status != http.StatusOK {
		t.Fatalf("admission through server 0: %d %s", r.Status, r.Body)
	}
	if r := v.do(t, http.MethodGet, servers[1].PublicURL+"/cart", nil); r.Status != http.StatusOK {
		t.Fatalf("server 1 with server 0's pass: %d %s", r.Status, r.Body)
	}
	// The pass copied alone, past the room, straight to the upstream and through either server.
	var pass *http.Cookie
	u, _ := url.Parse(servers[0].PublicURL)
	for _, c := range v.c.Jar.Cookies(u) {
		if c.Name == "sluice_pass_shop" {
			pass = c
		}
	}
	if pass == nil || strings.HasPrefix(pass.Value, "v1.") {
		t.Fatalf("pass %v is not a token", pass)
	}
	for _, base := range []string{servers[0].PublicURL, servers[1].PublicURL} {
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, base+"/", nil)
		req.AddCookie(pass)
		if r := exchange(t, noRedirects, req); r.Status == http.StatusOK {
			t.Errorf("%s let a pass in without its visitor cookie", base)
		}
	}
}

func TestRoomPassTokenSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{RoomPassBind: true}, {RoomPassTokenKeys: "x"}} {
		if err := c.withDefaults().validate(); err == nil || !strings.Contains(err.Error(), "room_pass_tokens") {
			t.Errorf("%+v: %v", c, err)
		}
	}
	env := redistest.New(t)
	ctx := t.Context()
	for _, bad := range []string{"short", "a,b", strings.Repeat("AAAA", 11) + ",x"} {
		if _, err := rooms.PassTokenKeys(ctx, env.Client, env.Prefix, bad); err == nil {
			t.Errorf("PassTokenKeys(%q) accepted", bad)
		}
	}
	seed := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	if keys, err := rooms.PassTokenKeys(ctx, env.Client, env.Prefix, seed+", "+seed); err != nil || len(keys) != 2 {
		t.Errorf("two configured keys: %v %v", len(keys), err)
	}
	if _, err := rooms.PassTokenKeys(ctx, env.Client, env.Prefix, strings.Repeat(seed+",", 3)+seed); err == nil {
		t.Error("four keys accepted")
	}
}

func parseJWKS(t *testing.T, body string) map[string]ed25519.PublicKey {
	t.Helper()
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid string } `json:"keys"`
	}
	if err := json.Unmarshal([]byte(body), &set); err != nil {
		t.Fatal(err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || k.Kty != "OKP" || k.Crv != "Ed25519" {
			t.Fatalf("key %+v", k)
		}
		keys[k.Kid] = x
	}
	return keys
}
