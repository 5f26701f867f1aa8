package ui

// sampleKey is the hash of a queue's per-minute counter samples: the dashboard's own key, carrying
// the queue's hash tag (queue.Client.HashTag), so a Cluster keeps it beside the queue's own keys:
//
//	<prefix>:ui:throughput:{<ns>:<queue>}
func sampleKey(prefix, queueTag string) string {
	return prefix + ":ui:throughput:" + queueTag
}

// daySampleKey is the hash of a queue's counter samples of the last day, one per daySlot: the
// day chart's points, beside sampleKey's:
//
//	<prefix>:ui:throughput-day:{<ns>:<queue>}
func daySampleKey(prefix, queueTag string) string {
	return prefix + ":ui:throughput-day:" + queueTag
}

// sessionKey is the hash of one dashboard session, named by the SHA-256 of its id (the cookie's
// value), so the keys in Redis do not hold what a browser sends. Every session shares the hash
// tag of the sessions' epoch, which its scripts read with it:
//
//	<prefix>:ui:{sessions}:<idHash>
func sessionKey(prefix, idHash string) string {
	return prefix + ":ui:{sessions}:" + idHash
}

// sessionEpochKey counts the "log out everywhere"s: a session made in an earlier epoch is dead.
//
//	<prefix>:ui:{sessions}:epoch
func sessionEpochKey(prefix string) string {
	return prefix + ":ui:{sessions}:epoch"
}

// serversKey indexes the servers whose heartbeat has not expired (a sorted set by expiry);
// serverKey is one server's description. They share a hash tag, which the heartbeat script
// writes together:
//
//	<prefix>:ui:{servers}
//	<prefix>:ui:{servers}:<id>
func serversKey(prefix string) string { return prefix + ":ui:{servers}" }

func serverKey(prefix, id string) string { return prefix + ":ui:{servers}:" + id }
