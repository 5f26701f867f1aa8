//go:build !linux

package server

import "os/exec"

// setParentDeathSignal is Linux-only; elsewhere Close stops the child.
func setParentDeathSignal(*exec.Cmd) {}
