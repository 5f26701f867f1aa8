package waitroom

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// signer signs and checks the two cookies a visitor carries:
//
//	visitor id  "v1.<id>.<mac>"                 mac = HMAC(key, "sluice-visitor\x00" id)
//	pass        "v1.<b64 visitor>.<expiry>.<mac>"   mac = HMAC(key, "sluice-pass\x00" room \x00 visitor \x00 expiry)
//
// and, for a while after a release, a third one of the pass's form: "left", whose mac starts
// "sluice-left" instead (so neither can stand for the other).
//
// cookie ids are 22 characters of base64url (16 random bytes); a pass names any visitor id (a
// library caller's own), in base64url. expiry is Unix milliseconds and mac is base64url of
// HMAC-SHA256. The first key signs; every key verifies (rotation), and macs are
// compared in constant time. The room is in the pass's mac, not its text: a pass of one room is
// worthless in another.
//
// Each key's HMACs are pooled (hmacs[i] for keys[i]): every status poll checks a visitor cookie,
// and a new HMAC-SHA256 costs two allocations and the key's setup.
type signer struct {
	keys  [][]byte
	hmacs []*sync.Pool
}

func newSigner(keys [][]byte) signer {
	s := signer{keys: slices.Clone(keys), hmacs: make([]*sync.Pool, len(keys))}
	for i, k := range s.keys {
		s.hmacs[i] = &sync.Pool{New: func() any { return hmac.New(sha256.New, k) }}
	}
	return s
}

var b64 = base64.RawURLEncoding

// mac is the HMAC of parts (joined by zero bytes) under keys[key].
func (s signer) mac(key int, parts ...string) []byte {
	h := s.hmacs[key].Get().(hash.Hash)
	h.Reset()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	sum := h.Sum(nil)
	s.hmacs[key].Put(h)
	return sum
}

// verify reports whether sig is the base64url mac of parts under any key.
func (s signer) verify(sig string, parts ...string) bool {
	var got [sha256.Size]byte
	if b64.DecodedLen(len(sig)) != len(got) {
		return false
	}
	if _, err := b64.Decode(got[:], []byte(sig)); err != nil {
		return false
	}
	ok := false
	for i := range s.keys {
		// Every key is tried, so the time taken does not say which one matched.
		if hmac.Equal(got[:], s.mac(i, parts...)) {
			ok = true
		}
	}
	return ok
}

// newVisitorID returns a fresh random visitor id.
func newVisitorID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return b64.EncodeToString(b[:])
}

// validID reports whether id looks like one newVisitorID makes.
func validID(id string) bool {
	if len(id) != 22 {
		return false
	}
	_, err := b64.DecodeString(id)
	return err == nil
}

func (s signer) signVisitor(id string) string {
	return "v1." + id + "." + b64.EncodeToString(s.mac(0, "sluice-visitor", id))
}

// checkVisitor returns the id in a signed visitor cookie, or "" when the value is not one.
func (s signer) checkVisitor(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) != 3 || parts[0] != "v1" || !validID(parts[1]) {
		return ""
	}
	if !s.verify(parts[2], "sluice-visitor", parts[1]) {
		return ""
	}
	return parts[1]
}

// Pass is what a signed pass says.
type Pass struct {
	Room    string
	Visitor string
	Expires time.Time
	// Binding is, for a token pass bound to its visitor cookie (Config.BindPasses), the base64url
	// SHA-256 of that cookie's value; "" for an unbound pass. The HTTP handlers refuse a bound pass
	// that arrives without its cookie; CheckPass, given the pass alone, cannot.
	Binding string
}

// The purposes of the tokens of the pass's form.
const (
	purposePass = "sluice-pass"
	purposeLeft = "sluice-left"
)

func (s signer) signPass(room, visitor string, expires time.Time) string {
	return s.signToken(purposePass, room, visitor, expires)
}

func (s signer) checkPass(room, v string, now time.Time) (Pass, bool) {
	return s.checkToken(purposePass, room, v, now)
}

// signToken signs a token of the pass's form for purpose.
func (s signer) signToken(purpose, room, visitor string, expires time.Time) string {
	exp := strconv.FormatInt(expires.UnixMilli(), 10)
	return "v1." + b64.EncodeToString([]byte(visitor)) + "." + exp + "." + b64.EncodeToString(s.mac(0, purpose, room, visitor, exp))
}

// checkToken returns what v says when it is a token of purpose for room signed with one of the
// keys and not expired at now.
func (s signer) checkToken(purpose, room, v string, now time.Time) (Pass, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return Pass{}, false
	}
	visitor, err := b64.DecodeString(parts[1])
	if err != nil || !validVisitor(string(visitor)) {
		return Pass{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || exp <= now.UnixMilli() {
		return Pass{}, false
	}
	if !s.verify(parts[3], purpose, room, string(visitor), parts[2]) {
		return Pass{}, false
	}
	return Pass{Room: room, Visitor: string(visitor), Expires: time.UnixMilli(exp)}, true
}
