package waitroom_test

import (
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// BenchmarkPassCheck compares the costs of a pass check, side by side in one run:
//
//   - first sight: what a process pays once per pass value (signature and claims), HMAC against
//     token, and the token checked by golang-jwt as a protected site would;
//   - cached: what the proxy pays on every other request of an admitted visitor (the request's
//     cookies read, the cache looked up; a bound pass also hashes its visitor cookie);
//   - sign: what an admission or a pass refresh (once per TouchInterval per visitor) pays.
func BenchmarkPassCheck(b *testing.B) {
	env := redistest.New(b)
	_, key, _ := ed25519.GenerateKey(nil)
	cfgs := map[string]waitroom.Config{
		"hmac":  {},
		"token": {PassTokenKeys: []ed25519.PrivateKey{key}, BindPasses: true},
	}
	for _, name := range []string{"hmac", "token"} {
		c := newClient(b, env, cfgs[name])
		newRoomNamed(b, c, "r", waitroom.RoomConfig{MaxActive: 10})
		room, _ := c.Room("r")
		mux := http.NewServeMux()
		c.Handler(waitroom.HandlerConfig{}).Register(mux)
		req := admittedRequest(b, mux)
		pass, _ := req.Cookie("sluice_pass_r")
		b.Run("first_sight/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := room.CheckPassUncached(pass.Value); !ok {
					b.Fatal("refused")
				}
			}
		})
		if name == "token" {
			b.Run("first_sight/token_golang-jwt", func(b *testing.B) {
				pub := key.Public()
				keyFunc := func(*jwt.Token) (any, error) { return pub, nil }
				for b.Loop() {
					if _, err := jwt.ParseWithClaims(pass.Value, &passClaims{}, keyFunc, jwt.WithValidMethods([]string{"EdDSA"}),
						jwt.WithAudience("r"), jwt.WithIssuer("sluice"), jwt.WithExpirationRequired()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run("cached/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := room.RequestPass(req); !ok {
					b.Fatal("refused")
				}
			}
		})
		b.Run("sign/"+name, func(b *testing.B) {
			exp := time.Now().Add(time.Minute)
			for b.Loop() {
				_ = room.IssuePass("0123456789abcdefghijkl", "", exp)
			}
		})
	}
}

// admittedRequest is a request of a browser the check route admitted: its visitor cookie, its
// pass and a few cookies of the site beside them.
func admittedRequest(b *testing.B, mux http.Handler) *http.Request {
	b.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/rooms/r/check", nil)
	req.Header.Set("Cookie", "_ga=GA1.2.1234567890.1234567890; theme=dark")
	for range 2 {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		for _, c := range rec.Result().Cookies() {
			req.AddCookie(c)
		}
	}
	if _, err := req.Cookie("sluice_pass_r"); err != nil {
		b.Fatal("not admitted")
	}
	return req
}
