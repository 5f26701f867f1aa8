package duework

import (
	"strconv"
	"strings"
	"sync"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// crc16Table is the CRC16-CCITT (XMODEM) table Redis Cluster hashes keys with.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// keySlot is the hash slot of a key, as Redis Cluster computes it: the CRC16 of its hash tag (what
// lies between the first '{' and the next '}', when that is not empty) or else of the whole key.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^key[i]]
	}
	return int(crc) % clusterSlots
}

// slotTags holds, for each hash slot, a short string that hashes to it: the hash tag of the
// index shard that lives in that slot (Key), so a thing's scripts can write its entry in the same
// call on a Cluster. Built once, on first use (some 160,000 hashes of short strings).
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, clusterSlots)
	for i, left := 0, clusterSlots; left > 0; i++ {
		s := strconv.Itoa(i)
		if slot := keySlot(s); tags[slot] == "" {
			tags[slot] = s
			left--
		}
	}
	return tags
})
