package waitroom

import (
	"strconv"
	"sync/atomic"
)

// callIDs makes the call ids of arrivals: a random prefix per process and a counter, so an id
// costs one small string and no random read (arrive.lua keeps the id of the poll it last charged
// to a visitor, so that the same call sent again is not charged twice). Ids need be unique only
// among one visitor's polls in one room, for a few seconds.
type callIDs struct {
	prefix string
	seq    atomic.Uint64
}

func newCallIDs() *callIDs { return &callIDs{prefix: newVisitorID()[:11]} }

func (c *callIDs) next() string {
	var b [32]byte
	n := copy(b[:], c.prefix)
	return string(strconv.AppendUint(b[:n], c.seq.Add(1), 36))
}
