package waitroom

import (
	"net/http"
	"testing"
	"time"
)

// TestPassCacheTakesOnlyExactVerifiedPasses: the cache answers only for a byte-for-byte copy of
// a pass verified before, and never past its expiry; anything else goes to the signature check.
func TestPassCacheTakesOnlyExactVerifiedPasses(t *testing.T) {
	t.Parallel()
	s := newSigner([][]byte{[]byte("0123456789abcdef0123456789abcdef")})
	now := time.Now()
	value := s.signPass("shop", "alice", now.Add(time.Minute))
	p, ok := s.checkPass("shop", value, now)
	if !ok {
		t.Fatal("a fresh pass did not verify")
	}
	c := newPassCache()
	c.put(value, p)
	if got, ok := c.get(value, now); !ok || got != p {
		t.Fatalf("cached pass: %+v %v", got, ok)
	}
	forged := value[:len(value)-1] + string(value[len(value)-1]^1)
	if _, ok := c.get(forged, now); ok {
		t.Fatal("a value one byte off a cached pass was taken from the cache")
	}
	if _, ok := c.get(value, p.Expires); ok {
		t.Fatal("a cached pass was taken at its expiry")
	}
	// Another value in the same slot replaces the entry; the first is verified again.
	other := s.signPass("shop", "bob", now.Add(time.Minute))
	c.put(value, p)
	c.slot(value).Store(&cachedPass{value: other, pass: Pass{Room: "shop", Visitor: "bob", Expires: now.Add(time.Minute)}})
	if _, ok := c.get(value, now); ok {
		t.Fatal("a slot holding another pass answered for the first")
	}
}

func TestCookieValue(t *testing.T) {
	t.Parallel()
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	r.Header["Cookie"] = []string{`a=1; sluice_pass_room2=two`, ` sluice_pass_room="one" ;b=2`}
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"sluice_pass_room", "one", true},
		{"sluice_pass_room2", "two", true},
		{"sluice_pass_roo", "", false},
		{"b", "2", true},
		{"c", "", false},
	} {
		if got, ok := cookieValue(r, tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("cookieValue(%s) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
		if ck, err := r.Cookie(tc.name); (err == nil) != tc.ok || (err == nil && ck.Value != tc.want) {
			t.Errorf("net/http reads %s otherwise: %v %v", tc.name, ck, err)
		}
	}
}
