package waitroom

import (
	"hash/maphash"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// passCacheSlots is how many verified passes a room remembers (a power of two). A busy node
// serves a few thousand admitted visitors at once; a visitor whose slot was taken by another's
// pass is verified again, at the cost of one HMAC.
const passCacheSlots = 4096

// passCache remembers passes this process has verified, so an admitted visitor's next requests
// skip the HMAC: the proxy's hot path checks a pass on every request. An entry holds a cookie
// value exactly as verified; a request's value is looked up by hash and compared in full, so only
// a byte-for-byte copy of a verified pass is taken from the cache, and its expiry is checked
// each time as the signature check does. Slots are replaced whole (lock-free): two visitors whose
// values share a slot take turns in it.
type passCache struct {
	seed  maphash.Seed
	slots [passCacheSlots]atomic.Pointer[cachedPass]
}

type cachedPass struct {
	value string
	pass  Pass
	// cookie is, for a bound pass, the visitor cookie it was last found beside (so the next
	// request that carries the same one is not hashed again); "" until then.
	cookie string
}

func newPassCache() *passCache { return &passCache{seed: maphash.MakeSeed()} }

func (c *passCache) slot(value string) *atomic.Pointer[cachedPass] {
	return &c.slots[maphash.String(c.seed, value)&(passCacheSlots-1)]
}

// get returns the pass value says when this process verified it before and it has not expired
// at now.
func (c *passCache) get(value string, now time.Time) (Pass, bool) {
	e := c.slot(value).Load()
	if e == nil || e.value != value || !now.Before(e.pass.Expires) {
		return Pass{}, false
	}
	return e.pass, true
}

// put remembers a pass that was just verified.
func (c *passCache) put(value string, p Pass) {
	c.slot(value).Store(&cachedPass{value: value, pass: p})
}

// foundBeside reports whether the bound pass value was found beside cookie last time.
func (c *passCache) foundBeside(value, cookie string) bool {
	e := c.slot(value).Load()
	return e != nil && e.value == value && e.cookie == cookie
}

// putBeside remembers a verified bound pass and the visitor cookie it was just found beside.
func (c *passCache) putBeside(value string, p Pass, cookie string) {
	c.slot(value).Store(&cachedPass{value: value, pass: p, cookie: cookie})
}

// cookieValue returns the value of the request's cookie name without parsing every cookie the
// request carries (as r.Cookie does, allocating each): the hot paths (the proxy's pass check, a
// status poll's visitor cookie) read one signed cookie of many. Quotes around the value are
// dropped, as net/http does; a value it would refuse is returned all the same and fails the
// signature check.
func cookieValue(r *http.Request, name string) (string, bool) {
	for _, line := range r.Header["Cookie"] {
		for len(line) > 0 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = strings.TrimLeft(part, " \t")
			k, v, ok := strings.Cut(part, "=")
			if !ok || k != name {
				continue
			}
			v = strings.TrimRight(v, " \t")
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			return v, true
		}
	}
	return "", false
}
