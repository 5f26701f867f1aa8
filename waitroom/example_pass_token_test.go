package waitroom_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// fetchJWKS reads the public keys of a Sluice's token passes, by kid, from its JWKS URL. This and
// checkPass are what a protected site runs (docs/waitroom.md, "Token passes"): no Sluice code and
// no secret, only a JWT library and the key set.
func fetchJWKS(url string) (map[string]ed25519.PublicKey, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // the verifier's own configured URL
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid string } `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, err
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if k.Kty == "OKP" && k.Crv == "Ed25519" && err == nil && len(x) == ed25519.PublicKeySize {
			keys[k.Kid] = x
		}
	}
	return keys, nil
}

// passClaims are the claims of a token pass.
type passClaims struct {
	jwt.RegisteredClaims
	Cnf map[string]string `json:"cnf"`
}

// checkPass returns the visitor a request's pass of room admits: a JWT signed with one of keys
// (alg EdDSA only), for this room (aud), from Sluice (iss), not expired, and, when the pass is
// bound, sent beside the visitor cookie it was issued with.
func checkPass(keys map[string]ed25519.PublicKey, r *http.Request, room string) (string, error) {
	ck, err := r.Cookie("sluice_pass_" + room)
	if err != nil {
		return "", err
	}
	var claims passClaims
	_, err = jwt.ParseWithClaims(ck.Value, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if k, ok := keys[kid]; ok {
			return k, nil
		}
		return nil, errors.New("unknown kid (fetch the JWKS again: the keys may have rotated)")
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithAudience(room), jwt.WithIssuer("sluice"),
		jwt.WithExpirationRequired())
	if err != nil {
		return "", err
	}
	if bound := claims.Cnf["sluice_visitor#S256"]; bound != "" {
		vc, err := r.Cookie("sluice_visitor")
		if err != nil {
			return "", errors.New("bound pass without its visitor cookie")
		}
		sum := sha256.Sum256([]byte(vc.Value))
		if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(bound)) != 1 {
			return "", errors.New("bound pass with another visitor cookie")
		}
	}
	return claims.Subject, nil
}

// With token passes the protected site checks admission itself, with the room's public keys (the
// JWKS) and any JWT library: here the site behind the room's middleware refuses a request whose
// pass it cannot verify, and a pass copied without its visitor cookie.
func ExampleClient_JWKS() {
	env, done := redistest.ForExample("waitroom-ExampleClient_JWKS")
	defer done()
	ctx := context.Background()
	tokenKey, _ := waitroom.SharedPassTokenKey(ctx, env.Client, env.Prefix) // the same on every instance
	client, _ := waitroom.NewClient(env.Client, waitroom.Config{
		Prefix:        env.Prefix,
		PassKeys:      [][]byte{[]byte("a secret of at least 32 bytes...")},
		PassTokenKeys: []ed25519.PrivateKey{tokenKey},
		BindPasses:    true,
	})
	_, _ = client.SetRoom(ctx, "shop", waitroom.RoomConfig{MaxActive: 10})
	room, _ := client.Room("shop")

	sluice := http.NewServeMux() // the public routes, JWKS among them
	client.Handler(waitroom.HandlerConfig{}).Register(sluice)
	sluiceSrv := httptest.NewServer(sluice)
	defer sluiceSrv.Close()
	keys, _ := fetchJWKS(sluiceSrv.URL + waitroom.JWKSPath)

	shop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := checkPass(keys, r, "shop"); err != nil {
			http.Error(w, "no admission", http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, "welcome")
	})
	site := httptest.NewServer(shop)
	defer site.Close()
	front := httptest.NewServer(waitroom.Middleware(room, shop))
	defer front.Close()

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	for range 2 { // the first request gets the visitor cookie, the second is admitted
		resp, _ := browser.Get(front.URL) //nolint:noctx // example
		resp.Body.Close()
	}
	// The browser's cookies, sent straight to the site (past the room): the site admits them.
	get := func(cookies []*http.Cookie) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, site.URL, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, _ := http.DefaultClient.Do(req)
		resp.Body.Close()
		return resp.StatusCode
	}
	cookies := jar.Cookies(mustParse(front.URL))
	var passOnly []*http.Cookie
	for _, c := range cookies {
		if c.Name == "sluice_pass_shop" {
			passOnly = append(passOnly, c)
		}
	}
	fmt.Println("keys:", len(keys), "with cookies:", get(cookies), "pass copied alone:", get(passOnly))
	// Output:
	// keys: 1 with cookies: 200 pass copied alone: 403
}

func mustParse(s string) *urlT {
	u, err := parseURL(s)
	if err != nil {
		panic(err)
	}
	return u
}
