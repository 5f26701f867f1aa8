// Package ids makes the ids of jobs (package queue) and tasks (package relay): 26 characters that
// sort by creation time, in the ULID layout.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// Alphabet is Crockford's base 32: ids sort as strings, and no two letters look alike.
const Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Len is the length of an id.
const Len = 26

// Gen makes ids: 48 bits of Unix milliseconds, then 80 bits that are random for the first id of a
// millisecond and incremented after it, so the ids of one Gen are strictly increasing. The zero
// value is ready to use; a Gen is safe for concurrent use.
type Gen struct {
	mu     sync.Mutex
	lastMs uint64
	hi     uint16 // top 16 of the 80 tail bits
	lo     uint64 // low 64
}

// Next returns a new id.
func (g *Gen) Next() string {
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
	return encode(ms<<16|uint64(hi), lo)
}

// encode writes 128 bits (hi, lo) as 26 base-32 digits (the first digit holds 3 bits).
func encode(hi, lo uint64) string {
	var out [Len]byte
	for i := Len - 1; i >= 0; i-- {
		out[i] = Alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// Valid reports whether s has the form of an id: Len characters of Alphabet.
func Valid(s string) bool {
	if len(s) != Len {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune(Alphabet, r) {
			return false
		}
	}
	return true
}
