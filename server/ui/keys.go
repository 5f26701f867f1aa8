package ui

// sampleKey is the hash of a queue's per-minute counter samples: the dashboard's own key, carrying
// the queue's hash tag (queue.Client.HashTag), so a Cluster keeps it beside the queue's own keys:
//
//	<prefix>:ui:throughput:{<ns>:<queue>}
func sampleKey(prefix, queueTag string) string {
	return prefix + ":ui:throughput:" + queueTag
}
