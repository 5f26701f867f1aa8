package waitroom

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// A token pass is a JWT (RFC 7519) signed with Ed25519 (alg EdDSA, RFC 8037), so the protected
// site can check a visitor's admission itself with the public keys of Client.JWKS and no secret:
//
//	header   {"alg":"EdDSA","kid":"<RFC 7638 thumbprint of the key>","typ":"JWT"}
//	claims   {"iss":"sluice","aud":"<room>","sub":"<visitor>","iat":<s>,"exp":<s>,
//	          "cnf":{"sluice_visitor#S256":"<base64url SHA-256 of the visitor cookie>"}}
//
// cnf is there only when the pass is bound (Config.BindPasses): the pass is then good only beside
// the visitor cookie it was issued with, so a copied pass cookie alone admits nobody.
//
// Sluice checks a token by the exact bytes of the header it signs with (one per key): no other
// alg, kid or header shape is ever parsed, so alg "none" and an HMAC made with a public key (the
// classic confusion) have nothing to match. Then the signature, then the claims.

// PassIssuer is the iss claim of token passes.
const PassIssuer = "sluice"

// bindingClaim names the cnf member that binds a pass to its visitor cookie: the SHA-256 of the
// cookie's value, as RFC 7800 confirmation methods name a hash ("x5t#S256").
const bindingClaim = visitorCookie + "#S256"

// tokenKey is one Ed25519 key of the token signer, with what it puts in every token and in the JWKS.
type tokenKey struct {
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	kid    string
	header string // the token's first segment: base64url of its header JSON
}

// tokenSigner signs with its first key and verifies with any (rotation, as for the HMAC keys).
type tokenSigner struct {
	keys []tokenKey
	jwks []byte // the JSON Web Key Set of the public keys
}

// jwk is a public key as a JWKS lists it (RFC 8037 OKP key).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// newTokenSigner returns the signer of keys (nil without any).
func newTokenSigner(keys []ed25519.PrivateKey) *tokenSigner {
	if len(keys) == 0 {
		return nil
	}
	s := &tokenSigner{}
	set := struct {
		Keys []jwk `json:"keys"`
	}{}
	for _, priv := range keys {
		pub, _ := priv.Public().(ed25519.PublicKey)
		x := b64.EncodeToString(pub)
		// RFC 7638: the thumbprint hashes the required members in lexicographic order, no spaces.
		thumb := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
		kid := b64.EncodeToString(thumb[:])
		s.keys = append(s.keys, tokenKey{priv: priv, pub: pub, kid: kid,
			header: b64.EncodeToString([]byte(`{"alg":"EdDSA","kid":"` + kid + `","typ":"JWT"}`))})
		set.Keys = append(set.Keys, jwk{Kty: "OKP", Crv: "Ed25519", X: x, Kid: kid, Alg: "EdDSA", Use: "sig"})
	}
	s.jwks, _ = json.Marshal(set)
	return s
}

// tokenClaims are the claims of a token pass.
type tokenClaims struct {
	Iss string            `json:"iss"`
	Aud string            `json:"aud"`
	Sub string            `json:"sub"`
	Iat int64             `json:"iat"`
	Exp int64             `json:"exp"`
	Cnf map[string]string `json:"cnf,omitempty"`
}

// sign returns the token pass of visitor in room, expiring at expires (to the second, rounded
// down: a token never outlives the pass it stands for), bound to the visitor cookie whose hash is
// binding ("" for none).
func (s *tokenSigner) sign(room, visitor, binding string, now, expires time.Time) string {
	claims := tokenClaims{Iss: PassIssuer, Aud: room, Sub: visitor, Iat: now.Unix(), Exp: expires.Unix()}
	if binding != "" {
		claims.Cnf = map[string]string{bindingClaim: binding}
	}
	body, _ := json.Marshal(claims)
	k := &s.keys[0]
	signed := k.header + "." + b64.EncodeToString(body)
	return signed + "." + b64.EncodeToString(ed25519.Sign(k.priv, []byte(signed)))
}

// verify returns what v says when it is a token pass of room signed by one of the keys and not
// expired at now.
func (s *tokenSigner) verify(room, v string, now time.Time) (Pass, bool) {
	header, rest, ok := strings.Cut(v, ".")
	if !ok {
		return Pass{}, false
	}
	body, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return Pass{}, false
	}
	var key *tokenKey
	for i := range s.keys {
		if s.keys[i].header == header {
			key = &s.keys[i]
			break
		}
	}
	rawSig, err := b64.DecodeString(sig)
	if key == nil || err != nil || len(rawSig) != ed25519.SignatureSize {
		return Pass{}, false
	}
	if !ed25519.Verify(key.pub, []byte(v[:len(header)+1+len(body)]), rawSig) {
		return Pass{}, false
	}
	raw, err := b64.DecodeString(body)
	if err != nil {
		return Pass{}, false
	}
	var c tokenClaims
	if err := json.Unmarshal(raw, &c); err != nil {
		return Pass{}, false
	}
	expires := time.Unix(c.Exp, 0)
	if c.Iss != PassIssuer || c.Aud != room || !validVisitor(c.Sub) || !now.Before(expires) {
		return Pass{}, false
	}
	return Pass{Room: room, Visitor: c.Sub, Expires: expires, Binding: c.Cnf[bindingClaim]}, true
}

// passBinding is the binding of a pass issued to the request: the SHA-256 of its visitor cookie,
// when the Client binds passes and the request has one; "" otherwise.
func (c *Client) passBinding(r *http.Request) string {
	if !c.cfg.BindPasses || c.tokens == nil {
		return ""
	}
	v, ok := cookieValue(r, visitorCookie)
	if !ok {
		return ""
	}
	return hashBinding(v)
}

func hashBinding(cookie string) string {
	var buf [bindingLen]byte
	return string(appendBinding(buf[:0], cookie))
}

// bindingLen is the length of a binding: a SHA-256 in unpadded base64url.
const bindingLen = 43

func appendBinding(dst []byte, cookie string) []byte {
	var in [128]byte // a visitor cookie is 70 bytes: hashed from the stack, with no allocation
	var sum [sha256.Size]byte
	if len(cookie) <= len(in) {
		sum = sha256.Sum256(in[:copy(in[:], cookie)])
	} else {
		sum = sha256.Sum256([]byte(cookie))
	}
	return b64.AppendEncode(dst, sum[:])
}

// boundTo reports whether req carries the visitor cookie the bound pass p (value) names. It runs
// on every request of a bound pass: the cookie it was found beside last time (the pass cache
// keeps it) is compared, not hashed again, and nothing is allocated. The binding is no secret
// (the pass shows it to whoever holds the pass); the cookie it hashes is. An empty cookie is
// none (the cache holds "" for a pass not yet found beside any).
func (r *Room) boundTo(value string, p Pass, req *http.Request) bool {
	v, ok := cookieValue(req, visitorCookie)
	switch {
	case !ok || v == "":
		return false
	case r.passes.foundBeside(value, v):
		return true
	}
	var buf [bindingLen]byte
	if string(appendBinding(buf[:0], v)) != p.Binding {
		return false
	}
	r.passes.putBeside(value, p, v)
	return true
}

// forwardPass puts the pass just issued in the request's cookies in place of any refused one
// the browser sent, for the handler after the room. It runs on admissions only.
func forwardPass(r *http.Request, name, pass string) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != name {
			r.AddCookie(c)
		}
	}
	r.AddCookie(&http.Cookie{Name: name, Value: pass}) //nolint:gosec // G124: a request cookie, passed on to the handler after the room; it carries no attributes
}

// issuePass signs the pass of visitor in room: a token when the Client has token keys, else the
// HMAC pass.
func (c *Client) issuePass(room, visitor, binding string, expires time.Time) string {
	if c.tokens != nil {
		return c.tokens.sign(room, visitor, binding, time.Now(), expires)
	}
	return c.signer.signPass(room, visitor, expires)
}

// checkPassValue checks a pass of either form: an HMAC pass ("v1." first, as the ones issued
// before token passes were turned on, which stay good until they expire) or a token.
func (c *Client) checkPassValue(room, v string, now time.Time) (Pass, bool) {
	if strings.HasPrefix(v, "v1.") || c.tokens == nil {
		return c.signer.checkPass(room, v, now)
	}
	return c.tokens.verify(room, v, now)
}
