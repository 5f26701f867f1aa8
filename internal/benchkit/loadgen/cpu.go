package loadgen

import (
	"os"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
)

// SelfProcess is the name under which Result.CPU reports the load generator's own process.
const SelfProcess = "loadgen"

// cpuMeter reads the CPU time of the configured processes and of this one.
type cpuMeter struct {
	pids map[string]int
}

// read returns each process's CPU time by name, this process under SelfProcess.
func (m cpuMeter) read() (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(m.pids)+1)
	for name, pid := range m.pids {
		d, err := cpustat.Process(pid)
		if err != nil {
			return nil, err
		}
		out[name] = d
	}
	self, err := cpustat.Process(os.Getpid())
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
