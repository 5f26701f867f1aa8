package waitroom_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

func newTokenKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// tokenSite is a Sluice serving the public routes of a client with token passes, bound.
type tokenSite struct {
	client *waitroom.Client
	srv    *httptest.Server
}

func newTokenSite(t *testing.T, env *redistest.Env, keys ...ed25519.PrivateKey) *tokenSite {
	t.Helper()
	c := newClient(t, env, waitroom.Config{PassTokenKeys: keys, BindPasses: true, ArrivalsPerMinute: -1})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &tokenSite{client: c, srv: srv}
}

// check asks the nginx auth_request route of room whether cookies admit a request.
func (s *tokenSite) check(t *testing.T, room string, cookies ...*http.Cookie) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, s.srv.URL+"/v1/rooms/"+room+"/check", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// admitted is a browser admitted to room through the check route: its visitor cookie and pass.
func (s *tokenSite) admitted(t *testing.T, room string) (visitor, pass *http.Cookie) {
	t.Helper()
	b := browser(t)
	for range 2 { // the first answer hands out the visitor cookie, the second admits
		doOnce(t, b, "GET", s.srv.URL+"/v1/rooms/"+room+"/check", nil)
	}
	for _, c := range b.Jar.Cookies(mustURL(t, s.srv.URL)) {
		switch c.Name {
		case "sluice_visitor":
			visitor = c
		case "sluice_pass_" + room:
			pass = c
		}
	}
	if visitor == nil || pass == nil {
		t.Fatalf("not admitted to %s: visitor %v pass %v", room, visitor, pass)
	}
	return visitor, pass
}

// verifyWithJWKS checks a pass as a protected site does: golang-jwt and the served JWKS only.
func verifyWithJWKS(t *testing.T, s *tokenSite, room string, cookies ...*http.Cookie) (string, error) {
	t.Helper()
	keys, err := fetchJWKS(s.srv.URL + waitroom.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return checkPass(keys, req, room)
}

func TestTokenPassVerifiesWithJWKSAlone(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	s := newTokenSite(t, env, newTokenKey(t))
	newRoomNamed(t, s.client, "r", waitroom.RoomConfig{MaxActive: 10})
	visitor, pass := s.admitted(t, "r")
	if strings.HasPrefix(pass.Value, "v1.") || strings.Count(pass.Value, ".") != 2 {
		t.Fatalf("pass %q is not a JWT", pass.Value)
	}
	sub, err := verifyWithJWKS(t, s, "r", visitor, pass)
	if err != nil {
		t.Fatalf("a fresh pass failed golang-jwt with the JWKS: %v", err)
	}
	if id := strings.Split(visitor.Value, ".")[1]; sub != id {
		t.Errorf("sub %q, want the visitor id %q", sub, id)
	}
	if code := s.check(t, "r", visitor, pass); code != http.StatusOK {
		t.Errorf("Sluice's check of the pass beside its cookie: %d", code)
	}
	resp, err := http.Get(s.srv.URL + waitroom.JWKSPath) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != "application/jwk-set+json" || cc != "public, max-age=300" {
		t.Errorf("JWKS headers: %q %q", ct, cc)
	}
	// A server with HMAC passes has no key set to serve.
	hmacOnly := newClient(t, env, waitroom.Config{})
	mux := http.NewServeMux()
	hmacOnly.Handler(waitroom.HandlerConfig{}).Register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, waitroom.JWKSPath, nil))
	if rec.Code != http.StatusNotFound || hmacOnly.JWKS() != nil {
		t.Errorf("JWKS of an HMAC-pass server: %d %s", rec.Code, rec.Body)
	}
}

// TestTokenPassRefusals presents forged, confused, expired, foreign and unbound passes to Room.CheckPass,
// to Sluice over HTTP (the check route) and to a site verifying with golang-jwt and the JWKS.
func TestTokenPassRefusals(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	key := newTokenKey(t)
	s := newTokenSite(t, env, key)
	newRoomNamed(t, s.client, "r", waitroom.RoomConfig{MaxActive: 1})
	newRoomNamed(t, s.client, "other", waitroom.RoomConfig{MaxActive: 1})
	room, _ := s.client.Room("r")
	visitor, pass := s.admitted(t, "r")
	otherVisitor, otherPass := s.admitted(t, "other")
	parts := strings.Split(pass.Value, ".")
	kid := kidOf(t, pass.Value)
	pub, _ := key.Public().(ed25519.PublicKey)
	id := strings.Split(visitor.Value, ".")[1]

	// Binding. The pass beside its cookie admits; the pass without it, or beside another
	// visitor's, is refused (and the request is a newcomer's: the slot is taken, so 401).
	rejected := func() uint64 { return room.Counters().PassRejected }
	for _, tc := range []struct {
		name    string
		cookies []*http.Cookie
		want    int
	}{
		{"pass beside its visitor cookie", []*http.Cookie{visitor, pass}, http.StatusOK},
		{"pass without its visitor cookie", []*http.Cookie{pass}, http.StatusUnauthorized},
		{"pass beside another visitor's cookie", []*http.Cookie{otherVisitor, pass}, http.StatusUnauthorized},
	} {
		before := rejected()
		if code := s.check(t, "r", tc.cookies...); code != tc.want {
			t.Errorf("%s: Sluice answered %d, want %d", tc.name, code, tc.want)
		}
		if refused := rejected() - before; refused != map[bool]uint64{true: 0, false: 1}[tc.want == http.StatusOK] {
			t.Errorf("%s: %d passes refused", tc.name, refused)
		}
		if _, err := verifyWithJWKS(t, s, "r", tc.cookies...); (err == nil) != (tc.want == http.StatusOK) {
			t.Errorf("%s: golang-jwt with the JWKS: %v", tc.name, err)
		}
	}
	if _, ok := room.CheckPass(pass.Value); !ok {
		t.Error("CheckPass, given the pass alone, refused a valid bound pass")
	}
	// A pass this process verified but never found beside a cookie, sent beside an empty one.
	other, _ := s.client.Room("other")
	if _, ok := other.CheckPass(otherPass.Value); !ok {
		t.Error("CheckPass refused a valid bound pass of room other")
	}
	if code := s.check(t, "other", &http.Cookie{Name: "sluice_visitor", Value: ""}, otherPass); code != http.StatusUnauthorized {
		t.Errorf("a bound pass beside an empty visitor cookie: %d", code)
	}

	// Forgeries. The visitor leaves and the other visitor (in line since its refused request above)
	// takes the slot, so that a refused pass is a 401 (its bearer joins the line) rather than a
	// fresh admission.
	release(t, room, id)
	if code := s.check(t, "r", otherVisitor); code != http.StatusOK {
		t.Fatalf("the next visitor in line was not admitted: %d", code)
	}
	signed := func(method jwt.SigningMethod, signKey any, exp time.Time) string {
		tok := jwt.NewWithClaims(method, jwt.MapClaims{"iss": "sluice", "aud": "r", "sub": id, "exp": exp.Unix()})
		tok.Header["kid"] = kid
		v, err := tok.SignedString(signKey)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// The control: a token golang-jwt signs with the right key, claims and kid is a good pass
	// (its header is byte for byte Sluice's), so each refusal below is for what it changes.
	if _, ok := room.CheckPass(signed(jwt.SigningMethodEdDSA, key, time.Now().Add(time.Minute))); !ok {
		t.Fatal("a well-made token was refused")
	}
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	for name, forged := range map[string]string{
		"forged signature":                parts[0] + "." + parts[1] + "." + flip(parts[2]),
		"forged claims":                   parts[0] + "." + flip(parts[1]) + "." + parts[2],
		"alg none":                        none,
		"HS256 keyed with the public key": signed(jwt.SigningMethodHS256, []byte(pub), time.Now().Add(time.Minute)),
		"expired":                         signed(jwt.SigningMethodEdDSA, key, time.Now().Add(-time.Second)),
		"another room's pass":             otherPass.Value,
	} {
		if _, ok := room.CheckPass(forged); ok {
			t.Errorf("%s: accepted by CheckPass", name)
		}
		before := rejected()
		if code := s.check(t, "r", visitor, passCookie("r", forged)); code != http.StatusUnauthorized || rejected() != before+1 {
			t.Errorf("%s: Sluice answered %d, refused %d passes", name, code, rejected()-before)
		}
		if _, err := verifyWithJWKS(t, s, "r", visitor, passCookie("r", forged)); err == nil {
			t.Errorf("%s: accepted by golang-jwt with the JWKS", name)
		}
	}
}

func TestTokenPassKeyRotation(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	oldKey, newKey := newTokenKey(t), newTokenKey(t)
	before := newTokenSite(t, env, oldKey)
	newRoomNamed(t, before.client, "r", waitroom.RoomConfig{MaxActive: 10})
	oldVisitor, oldPass := before.admitted(t, "r")

	// Published first (second in the list: it verifies, it does not sign yet), then signing with
	// the old key still verifying: both keep the old pass good, for Sluice and for the JWKS.
	for _, keys := range [][]ed25519.PrivateKey{{oldKey, newKey}, {newKey, oldKey}} {
		during := newTokenSite(t, env, keys...)
		if code := during.check(t, "r", oldVisitor, oldPass); code != http.StatusOK {
			t.Errorf("keys %d: the old key's pass: %d", len(keys), code)
		}
		if _, err := verifyWithJWKS(t, during, "r", oldVisitor, oldPass); err != nil {
			t.Errorf("the old key's pass with the rotating JWKS: %v", err)
		}
		if n := len(mustJWKS(t, during)); n != 2 {
			t.Errorf("the rotating JWKS has %d keys, want 2", n)
		}
	}
	rotating := newTokenSite(t, env, newKey, oldKey)
	newVisitor, newPass := rotating.admitted(t, "r")
	if kidOf(t, newPass.Value) == kidOf(t, oldPass.Value) {
		t.Fatal("the pass signed after the switch carries the old kid")
	}
	after := newTokenSite(t, env, newKey)
	if code := after.check(t, "r", newVisitor, newPass); code != http.StatusOK {
		t.Errorf("the new key's pass after the rotation: %d", code)
	}
	if _, err := verifyWithJWKS(t, after, "r", newVisitor, newPass); err != nil {
		t.Errorf("the new key's pass with the final JWKS: %v", err)
	}
	if _, err := verifyWithJWKS(t, after, "r", oldVisitor, oldPass); err == nil {
		t.Error("the old key's pass verified with the JWKS after the old key was dropped")
	}
	room, _ := after.client.Room("r")
	if _, ok := room.CheckPass(oldPass.Value); ok {
		t.Error("Sluice accepted the old key's pass after the old key was dropped")
	}
}

// TestTokenPassTwoInstances: instances that share a Redis make one token key between them (the
// first to need it), publish the same JWKS, and admit each other's visitors.
func TestTokenPassTwoInstances(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	keys := make([]ed25519.PrivateKey, 2)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := waitroom.SharedPassTokenKey(context.Background(), env.Client, env.Prefix)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	a, b := newTokenSite(t, env, keys[0]), newTokenSite(t, env, keys[1])
	if string(a.client.JWKS()) != string(b.client.JWKS()) {
		t.Fatalf("two instances publish different keys:\n%s\n%s", a.client.JWKS(), b.client.JWKS())
	}
	newRoomNamed(t, a.client, "r", waitroom.RoomConfig{MaxActive: 10})
	visitor, pass := a.admitted(t, "r")
	if code := b.check(t, "r", visitor, pass); code != http.StatusOK {
		t.Errorf("instance b refused instance a's pass: %d", code)
	}
	if _, err := verifyWithJWKS(t, b, "r", visitor, pass); err != nil {
		t.Errorf("instance a's pass with instance b's JWKS: %v", err)
	}
}

// TestHMACPassesStayGoodWhenTokensTurnOn: passes issued before token passes were turned on keep
// admitting until they expire.
func TestHMACPassesStayGoodWhenTokensTurnOn(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	hmacKey := testKey()
	before := newClient(t, env, waitroom.Config{PassKeys: [][]byte{hmacKey}})
	room := newRoom(t, before, waitroom.RoomConfig{MaxActive: 10})
	st := arrive(t, room, "alice")
	withTokens := newClient(t, env, waitroom.Config{PassKeys: [][]byte{hmacKey}, PassTokenKeys: []ed25519.PrivateKey{newTokenKey(t)}})
	r, _ := withTokens.Room("r")
	if _, ok := r.CheckPass(st.Pass); !ok {
		t.Error("an HMAC pass was refused once token passes were on")
	}
	if fresh := arrive(t, r, "bob"); strings.HasPrefix(fresh.Pass, "v1.") {
		t.Errorf("a pass issued with token keys is not a token: %q", fresh.Pass)
	}
}

func TestPassTokenConfig(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	k := newTokenKey(t)
	for _, cfg := range []waitroom.Config{
		{BindPasses: true},
		{PassTokenKeys: []ed25519.PrivateKey{k, k, k, k}},
		{PassTokenKeys: []ed25519.PrivateKey{k[:32]}},
	} {
		cfg.PassKeys = [][]byte{testKey()}
		if _, err := waitroom.NewClient(env.Client, cfg); err == nil || !strings.Contains(err.Error(), "PassTokenKeys") {
			t.Errorf("NewClient(%d keys, bind %v): %v", len(cfg.PassTokenKeys), cfg.BindPasses, err)
		}
	}
	for _, bad := range []string{"", "short", strings.Repeat("A", 44), "not base64 at all, but 43 characters long!"} {
		if _, err := waitroom.ParsePassTokenKey(bad); err == nil {
			t.Errorf("ParsePassTokenKey(%q) accepted", bad)
		}
	}
	seed := base64.RawURLEncoding.EncodeToString(k.Seed())
	if got, err := waitroom.ParsePassTokenKey(seed); err != nil || !got.Equal(k) {
		t.Errorf("ParsePassTokenKey(seed) = %v, %v", got, err)
	}
}

func passCookie(room, value string) *http.Cookie {
	return &http.Cookie{Name: "sluice_pass_" + room, Value: value}
}

func newRoomNamed(t testing.TB, c *waitroom.Client, name string, cfg waitroom.RoomConfig) {
	t.Helper()
	if _, err := c.SetRoom(context.Background(), name, cfg); err != nil {
		t.Fatalf("SetRoom(%s): %v", name, err)
	}
}

func mustJWKS(t *testing.T, s *tokenSite) map[string]ed25519.PublicKey {
	t.Helper()
	keys, err := fetchJWKS(s.srv.URL + waitroom.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func kidOf(t *testing.T, token string) string {
	t.Helper()
	return mustJSONField(t, strings.Split(token, ".")[0], "kid")
}

// mustJSONField reads a string field of a base64url JSON segment.
func mustJSONField(t *testing.T, segment, field string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(segment+".e30.", jwt.MapClaims{})
	if err != nil {
		t.Fatalf("segment %q: %v", segment, err)
	}
	v, _ := tok.Header[field].(string)
	return v
}

// TestAdmittingRequestCarriesItsPass: the request that gets a visitor in reaches the site behind
// the middleware with its new pass (in place of a refused one it came with), so a site that checks
// passes itself admits it too.
func TestAdmittingRequestCarriesItsPass(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	s := newTokenSite(t, env, newTokenKey(t))
	newRoomNamed(t, s.client, "r", waitroom.RoomConfig{MaxActive: 10})
	room, _ := s.client.Room("r")
	keys := mustJWKS(t, s)
	front := httptest.NewServer(waitroom.Middleware(room, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := checkPass(keys, r, "r"); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
		}
	})))
	t.Cleanup(front.Close)
	b := browser(t)
	b.Jar.SetCookies(mustURL(t, front.URL), []*http.Cookie{passCookie("r", "a.stale.pass")})
	if r := do(t, b, "GET", front.URL+"/", nil); r.code != http.StatusOK {
		t.Fatalf("the admitting request: %d %s", r.code, r.body)
	}
}
