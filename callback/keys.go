package callback

import "github.com/sluicehq/sluice/internal/names"

// settingsKeys are one namespace's keys, under the hash tag {cbns:<ns>}, so the settings scripts
// run on Redis Cluster.
type settingsKeys struct {
	secrets      string // list, newest first
	destinations string // set of URL prefixes
	flags        string // hash: allow_private
}

func newSettingsKeys(prefix, ns string) settingsKeys {
	base := prefix + ":callbacks:{cbns:" + ns + "}:"
	return settingsKeys{secrets: base + "secrets", destinations: base + "destinations", flags: base + "flags"}
}

// queueNameRule is the queue package's rule for namespace names, which callbacks follow (and the
// key prefix too).
const queueNameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes"

func queueName(s string) bool { return names.Valid(s, 255) }
