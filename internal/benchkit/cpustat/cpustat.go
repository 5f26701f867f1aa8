// Package cpustat reads the CPU time processes have used, for benchmarks that report CPU per
// operation: on a shared, noisy machine CPU per operation holds up where operations per second
// do not. It reads this process (getrusage), another process by pid (/proc, Linux) and a Redis
// server (INFO cpu).
package cpustat

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Self is the user and system CPU time this process has used.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0 // cannot fail for RUSAGE_SELF with a valid pointer
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, 100 on Linux.
const clockTicks = 10 * time.Millisecond

// Process is the user and system CPU time process pid has used, from /proc/<pid>/stat (Linux).
// Its resolution is 10 ms, so measured windows should be seconds long.
func Process(pid int) (time.Duration, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces: the state
	// is field 3 of the line, utime 14 and stime 15.
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("CPU time of process %d: unexpected /proc/%d/stat %q", pid, pid, stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("CPU time of process %d: unexpected /proc/%d/stat %q", pid, pid, stat)
	}
	return time.Duration(utime+stime) * clockTicks, nil
}

// Redis is the user and system CPU time the Redis server of rdb has used (INFO cpu). On a
// Cluster it is that of the node the INFO goes to.
func Redis(ctx context.Context, rdb redis.UniversalClient) (time.Duration, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("CPU time of Redis: %w", err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("CPU time of Redis: INFO cpu %s: %w", k, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// MustRedis is Redis for benchmarks: a failure ends tb.
func MustRedis(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	tb.Helper()
	d, err := Redis(context.Background(), rdb)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// MustProcess is Process for benchmarks: a failure ends tb.
func MustProcess(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	d, err := Process(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
