package ui

// sampleKey is the hash of a queue's per-minute counter samples. Its hash tag is the queue's, so
// a Cluster keeps it beside the queue's own keys.
func sampleKey(prefix, ns, q string) string {
	return prefix + ":ui:throughput:{" + ns + ":" + q + "}"
}
