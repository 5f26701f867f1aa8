package duework

import (
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/internal/redisx"
)

// slotTags holds, for each hash slot, a short string that hashes to it: the hash tag of the
// index shard that lives in that slot (Key), so a thing's scripts can write its entry in the same
// call on a Cluster. Built once, on first use (some 160,000 hashes of short strings).
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, redisx.ClusterSlots)
	for i, left := 0, redisx.ClusterSlots; left > 0; i++ {
		s := strconv.Itoa(i)
		if slot := redisx.KeySlot(s); tags[slot] == "" {
			tags[slot] = s
			left--
		}
	}
	return tags
})
