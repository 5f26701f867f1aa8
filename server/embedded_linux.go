package server

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// setParentDeathSignal makes the kernel send SIGTERM to the redis-server child if this process
// dies without stopping it, so no orphan keeps the data directory.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// lockDataDir takes an exclusive lock on the data directory, so two servers never run a
// redis-server on the same append-only files. Closing the file releases it (the kernel does too
// when the process dies).
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "sluice.lock"), os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // our data dir
	if err != nil {
		return nil, fmt.Errorf("server: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("server: data dir %s is in use by another sluice server", dir)
		}
		return nil, fmt.Errorf("server: data dir lock: %w", err)
	}
	return f, nil
}
