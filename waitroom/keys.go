package waitroom

import "github.com/sluicehq/sluice/internal/names"

// Every key this package writes is built here. All keys of one room share the hash tag {<room>},
// so every script runs on Redis Cluster:
//
//	<prefix>:waitroom:rooms                 set of room names (for listing and maintenance)
//	<prefix>:waitroom:{<room>}:config       hash: the room's settings and their version
//	<prefix>:waitroom:{<room>}:active       zset: admitted visitor -> last touch (ms)
//	<prefix>:waitroom:{<room>}:line         zset: waiting visitor -> ticket
//	<prefix>:waitroom:{<room>}:seen         zset: waiting visitor -> last heartbeat (ms)
//	<prefix>:waitroom:{<room>}:since        hash: waiting visitor -> arrival (ms)
//	<prefix>:waitroom:{<room>}:stats        hash: counters and the inflow limit's state
//	<prefix>:waitroom:{<room>}:minutes      hash: admissions and abandonments per minute (last minutes)
//	<prefix>:waitroom:{<room>}:waits        list: the waits of the latest 101 admissions
//
// The rooms set is the one key outside a room's slot: it is written beside the room's script
// (before and after it on create, before it on delete), and a name listed without settings is
// skipped.

// roomKeys are a room's keys in the order every script receives them (lua/lib.lua).
type roomKeys []string

func newRoomKeys(prefix, room string) roomKeys {
	base := prefix + ":waitroom:{" + room + "}:"
	return roomKeys{
		base + "config", base + "active", base + "line", base + "seen",
		base + "since", base + "stats", base + "minutes", base + "waits",
	}
}

func (k roomKeys) config() string { return k[0] }

func roomsKey(prefix string) string { return prefix + ":waitroom:rooms" }

// nameRule is the rule for room names: they appear in URLs, cookie names and keys.
const nameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 128 bytes"

func validName(s string) bool { return names.Valid(s, 128) }
