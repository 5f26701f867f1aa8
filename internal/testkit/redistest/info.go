package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// InfoSum is a numeric field of an INFO section (used_cpu_sys in "cpu", used_memory in
// "memory"), summed over the masters of a cluster: what benchmarks read Redis's own CPU time and
// memory with.
func InfoSum(tb testing.TB, rdb redis.UniversalClient, section, field string) float64 {
	tb.Helper()
	read := func(c redis.Cmdable) (float64, error) {
		info, err := c.Info(context.Background(), section).Result()
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				return strconv.ParseFloat(v, 64)
			}
		}
		return 0, fmt.Errorf("INFO %s has no %s", section, field)
	}
	var mu sync.Mutex
	total := 0.0
	add := func(ctx context.Context, c *redis.Client) error {
		v, err := read(c)
		mu.Lock()
		total += v
		mu.Unlock()
		return err
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(context.Background(), add)
	} else {
		total, err = read(rdb)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return total
}
