package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// SelfProcess is the name under which Result.CPU reports the load generator's own process.
const SelfProcess = "loadgen"

// clockTicks is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, 100 on Linux.
const clockTicks = 10 * time.Millisecond

// processCPU is the user and system CPU time process pid has used, from /proc/<pid>/stat (Linux).
// Its resolution is 10 ms, so measured windows should be seconds long.
func processCPU(pid int) (time.Duration, error) {
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

// cpuMeter reads the CPU time of the configured processes and of this one.
type cpuMeter struct {
	pids map[string]int
}

// read returns each process's CPU time by name, this process under SelfProcess.
func (m cpuMeter) read() (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(m.pids)+1)
	for name, pid := range m.pids {
		d, err := processCPU(pid)
		if err != nil {
			return nil, err
		}
		out[name] = d
	}
	self, err := processCPU(os.Getpid())
	if err != nil {
		return nil, err
	}
	out[SelfProcess] = self
	return out, nil
}

// perJob is the CPU each process spent per job between two readings, in microseconds.
func perJob(before, after map[string]time.Duration, jobs int64) map[string]float64 {
	out := make(map[string]float64, len(after))
	for name, d := range after {
		out[name] = float64((d - before[name]).Microseconds()) / float64(max(jobs, 1))
	}
	return out
}
