package server

// readyProbeKey is the key /readyz writes to learn whether Redis takes writes now: a few bytes
// that expire by themselves.
func readyProbeKey(prefix string) string { return prefix + ":readyz:probe" }
