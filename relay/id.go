package relay

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// crockford is the alphabet of the id tails: sortable as strings, no ambiguous letters.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// idGen makes task ids "<endpoint>.<26 characters>": the endpoint, so that the task's keys (which
// carry the endpoint's hash tag) are found from the id alone, then 48 bits of Unix milliseconds
// and 80 bits random for the first id of a millisecond and incremented after it (ULID layout).
type idGen struct {
	mu     sync.Mutex
	lastMs uint64
	hi     uint16
	lo     uint64
}

func (g *idGen) next(endpoint string) string {
	ms := uint64(time.Now().UnixMilli())
	g.mu.Lock()
	if ms <= g.lastMs {
		ms = g.lastMs
		g.lo++
		if g.lo == 0 {
			g.hi++
		}
	} else {
		var b [10]byte
		_, _ = rand.Read(b[:])
		g.lastMs = ms
		g.hi = binary.BigEndian.Uint16(b[:2]) & 0x7fff
		g.lo = binary.BigEndian.Uint64(b[2:])
	}
	hi, lo := g.hi, g.lo
	g.mu.Unlock()
	var out [26]byte
	h := ms<<16 | uint64(hi)
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | h<<59
		h >>= 5
	}
	return endpoint + "." + string(out[:])
}

// splitID returns the endpoint of a task id, or false when id is not one.
func splitID(id string) (endpoint string, ok bool) {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 || len(id)-i-1 != 26 {
		return "", false
	}
	endpoint = id[:i]
	if !validName(endpoint) {
		return "", false
	}
	for _, r := range id[i+1:] {
		if !strings.ContainsRune(crockford, r) {
			return "", false
		}
	}
	return endpoint, true
}
