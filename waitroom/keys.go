package waitroom

import (
	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/redisx"
)

// Every key this package writes is built here. All keys of one room share the hash tag {<room>},
// so every script runs on Redis Cluster:
//
//	<prefix>:waitroom:rooms                 set of room names (for listing and maintenance)
//	<prefix>:waitroom:pass_key              string: the pass key of SharedPassKey
//	<prefix>:waitroom:pass_token_key        string: the Ed25519 seed of SharedPassTokenKey
//	<prefix>:waitroom:{<room>}:config       hash: the room's settings and their version
//	<prefix>:waitroom:{<room>}:active       zset: admitted visitor -> last touch (ms)
//	<prefix>:waitroom:{<room>}:line         zset: waiting visitor -> ticket
//	<prefix>:waitroom:{<room>}:seen         zset: waiting visitor -> last heartbeat (ms)
//	<prefix>:waitroom:{<room>}:since        hash: waiting visitor -> arrival (ms)
//	<prefix>:waitroom:{<room>}:stats        hash: counters and the inflow limit's state
//	<prefix>:waitroom:{<room>}:minutes      hash: admissions and abandonments per minute (last minutes)
//	<prefix>:waitroom:{<room>}:waits        list: the waits of the latest 101 admissions
//	<prefix>:waitroom:{<room>}:released     zset: released visitor -> until (ms): its passes are refused
//	<prefix>:waitroom:{<room>}:call:<id>    string: a release call's answer (redisx.OnceKeys), 60 s
//	<prefix>:waitroom:{<room>}:proofs       zset: used proof-of-work challenge id -> its expiry (ms)
//	<prefix>:waitroom:{<room>}:addr:<addr>  string: an address's arrival limit state (GCRA, ms), expiring
//	<prefix>:waitroom:{<room>}:poll:<visitor>  string: a visitor's poll limit state (GCRA, ms), expiring
//	<prefix>:waitroom:due[:{<t>}]           zset: room -> when its next visitor goes idle or silent
//	                                        (ms), at or before it (the due index, dueBase)
//	<prefix>:waitroom:due:swept             string: the rooms set was swept lately (Sweep)
//
// The rooms set and the pass keys are the keys outside a room's slot. The rooms set is written
// beside the room's script (before and after it on create, before it on delete), and a name
// listed without settings is skipped; each pass key is written once (SET NX) and only read after.

// roomKeys are a room's keys in the order every script receives them (lua/lib.lua); the ninth is
// the shard of the due index in the room's hash slot (duework.Key), not under the room's tag.
type roomKeys []string

func newRoomKeys(prefix, room string, cluster bool) roomKeys {
	base := prefix + ":waitroom:{" + room + "}:"
	return roomKeys{
		base + "config", base + "active", base + "line", base + "seen",
		base + "since", base + "stats", base + "minutes", base + "waits",
		duework.Key(dueBase(prefix), base, cluster), base + "released",
	}
}

func (k roomKeys) config() string { return k[0] }
func (k roomKeys) due() string    { return k[8] }

// dueBase names the due index of the rooms (duework): member the room's name, score when its
// next admitted visitor goes idle (session_timeout) or waiting visitor silent (queue_timeout), at
// or before it. The scripts that admit or queue visitors lower the entry in the same call;
// maintain.lua sets it to the next due time, or removes it when the room holds nobody.
func dueBase(prefix string) string { return prefix + ":waitroom:due" }

// dueSweptKey exists while every room of the rooms set has been visited lately (duework.Sweep).
func dueSweptKey(prefix string) string { return dueBase(prefix) + ":swept" }

// once is the keys of a new call of a Once script on the room: its call key (with a new call id)
// first, then the room's keys.
func (k roomKeys) once() []string {
	return redisx.OnceKeys(k.base()+"call:"+redisx.NewCallID(), k)
}

// arrive is the keys of arrive.lua: the room's, then its used proofs, the arrival limit key of
// the client address addr ("" for none: a key the script leaves alone) and the poll limit key of
// the visitor. The visitor's poll limit lives in the room's slot so that a poll is one call.
func (k roomKeys) arrive(addr, visitor string) []string {
	base := k.base()
	return append(append(make([]string, 0, len(k)+3), k...), base+"proofs", base+"addr:"+addr, base+"poll:"+visitor)
}

// base is the part of the room's keys before their own names: "<prefix>:waitroom:{<room>}:".
func (k roomKeys) base() string { return k[0][:len(k[0])-len("config")] }

func roomsKey(prefix string) string { return prefix + ":waitroom:rooms" }

// passKeyKey holds the pass key the instances sharing a Redis made for themselves
// (SharedPassKey).
func passKeyKey(prefix string) string { return prefix + ":waitroom:pass_key" }

// passTokenKeyKey holds the seed of the token pass key the instances sharing a Redis made for
// themselves (SharedPassTokenKey).
func passTokenKeyKey(prefix string) string { return prefix + ":waitroom:pass_token_key" }

// nameRule is the rule for room names: they appear in URLs, cookie names and keys.
const nameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 128 bytes"

func validName(s string) bool { return names.Valid(s, 128) }
