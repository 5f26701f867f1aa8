package queue

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// crockford is the alphabet of job ids: sortable as strings, no ambiguous letters.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// idGen makes 26-character ids that sort by creation time: 48 bits of Unix milliseconds, then 80
// bits that are random for the first id of a millisecond and incremented after it, so ids of one
// process are strictly increasing (the ULID layout).
type idGen struct {
	mu     sync.Mutex
	lastMs uint64
	hi     uint16 // top 16 of the 80 tail bits
	lo     uint64 // low 64
}

func (g *idGen) next() string {
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
		g.hi = binary.BigEndian.Uint16(b[:2]) & 0x7fff // room to increment without wrapping
		g.lo = binary.BigEndian.Uint64(b[2:])
	}
	hi, lo := g.hi, g.lo
	g.mu.Unlock()

	var raw [16]byte
	binary.BigEndian.PutUint64(raw[0:8], ms<<16|uint64(hi))
	binary.BigEndian.PutUint64(raw[8:16], lo)
	return encodeCrockford(raw)
}

// encodeCrockford writes the 128 bits as 26 base-32 digits (the first digit holds 3 bits).
func encodeCrockford(raw [16]byte) string {
	var out [26]byte
	hi := binary.BigEndian.Uint64(raw[0:8])
	lo := binary.BigEndian.Uint64(raw[8:16])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
