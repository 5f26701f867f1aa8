//go:build !linux

package server

import (
	"os"
	"os/exec"
)

// setParentDeathSignal is Linux-only; elsewhere Close stops the child.
func setParentDeathSignal(*exec.Cmd) {}

// lockDataDir is Linux-only; elsewhere do not point two servers at one data dir.
func lockDataDir(string) (*os.File, error) { return nil, nil }
