package redistest

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// CPUSeconds is Redis's own CPU time so far (INFO cpu used_cpu_sys + used_cpu_user), summed over
// the masters of a cluster.
func CPUSeconds(tb testing.TB, rdb redis.UniversalClient) float64 {
	tb.Helper()
	return InfoSum(tb, rdb, "cpu", "used_cpu_sys") + InfoSum(tb, rdb, "cpu", "used_cpu_user")
}

// CPUPercentOver is Redis's own CPU time over the next window, as a percent of one core (summed
// over the masters of a cluster): what the work running meanwhile (a maintainer, say) costs it.
func CPUPercentOver(tb testing.TB, rdb redis.UniversalClient, window time.Duration) float64 {
	tb.Helper()
	before := CPUSeconds(tb, rdb)
	time.Sleep(window)
	return 100 * (CPUSeconds(tb, rdb) - before) / window.Seconds()
}
