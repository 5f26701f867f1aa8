package store

import (
	"embed"

	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// scriptName names one queue script (one .lua file). The Store's methods run scripts only by these
// names, through run and runMany (runner.go), which choose between a function call and EVALSHA.
type scriptName string

// The queue's scripts.
const (
	scriptPublish scriptName = "publish"
	// scriptPublishReady publishes one job due now with no ttl, unique key or callback, on its own
	// keys (a bare script: see bareScripts).
	scriptPublishReady scriptName = "publish_ready"
	// scriptPublishBatch publishes jobs due now with no unique key or callback, on their own keys
	// (bare).
	scriptPublishBatch scriptName = "publish_batch"
	scriptConsume      scriptName = "consume"
	scriptAck          scriptName = "ack"
	// scriptAckNoResult acks deliveries that keep no result, on their own keys (bare).
	scriptAckNoResult scriptName = "ack_noresult"
	scriptNack        scriptName = "nack"
	scriptTouch       scriptName = "touch"
	scriptRelease     scriptName = "release"
	scriptDelete      scriptName = "delete"
	scriptGet         scriptName = "get"
	scriptPeek        scriptName = "peek"
	scriptStats       scriptName = "stats"
	scriptPurge       scriptName = "purge"
	scriptDeadList    scriptName = "dead_list"
	scriptDeadRespawn scriptName = "dead_respawn"
	scriptDeadDelete  scriptName = "dead_delete"
	scriptMaintain    scriptName = "maintain"
	scriptPending     scriptName = "pending"
	// scriptConsumeCallbacks leases jobs of a queue's callback lane for the callback deliverer.
	scriptConsumeCallbacks scriptName = "consume_callbacks"
	// The inspection scripts of dashboards and the job list API (browse.go).
	scriptList           scriptName = "list"
	scriptDelayedSplit   scriptName = "delayed_split"
	scriptRunNow         scriptName = "run_now"
	scriptSetPriority    scriptName = "set_priority"
	scriptCallbackFinish scriptName = "callback_finish"
	scriptResume         scriptName = "resume"
)

var scriptNames = []scriptName{
	scriptPublish, scriptConsume, scriptAck, scriptNack, scriptTouch, scriptRelease, scriptDelete,
	scriptGet, scriptPeek, scriptStats, scriptPurge, scriptDeadList, scriptDeadRespawn,
	scriptDeadDelete, scriptMaintain, scriptPending, scriptConsumeCallbacks, scriptPublishReady,
	scriptAckNoResult, scriptPublishBatch, scriptScheduleFire, scriptList, scriptDelayedSplit,
	scriptRunNow, scriptSetPriority, scriptCallbackFinish, scriptResume, registerScript,
}

// bareScripts take keys and arguments of their own rather than the queue's whole set (lib.lua's
// bind). They run only as library functions.
var bareScripts = map[scriptName]bool{scriptPublishReady: true, scriptPublishBatch: true, scriptAckNoResult: true, registerScript: true}

// registerScript adds a queue to its namespace's registry under the namespace's quota of queues
// (bare: its one key is the namespace's queue set). Store.Register runs it by name.
const registerScript = "register"

// scriptFlags are the Redis function flags of each script (see redisx.LibraryScript.Flag): the
// scripts that only read say no-writes (they run whatever the memory), and the ones that free
// memory or hardly add any (leases, acks, deletes, retries) say allow-oom, so a full Redis can
// still be drained. Publish has no flag: a full Redis refuses new jobs.
var scriptFlags = map[scriptName]string{
	scriptGet: "no-writes", scriptPeek: "no-writes", scriptStats: "no-writes", scriptDeadList: "no-writes",
	scriptPending: "no-writes", scriptList: "no-writes", scriptDelayedSplit: "no-writes",
	scriptConsume: "allow-oom", scriptAck: "allow-oom", scriptAckNoResult: "allow-oom", scriptNack: "allow-oom",
	scriptTouch:   "allow-oom",
	scriptRelease: "allow-oom", scriptDelete: "allow-oom", scriptPurge: "allow-oom",
	scriptDeadRespawn: "allow-oom", scriptDeadDelete: "allow-oom", scriptMaintain: "allow-oom",
	scriptConsumeCallbacks: "allow-oom", scriptRunNow: "allow-oom", scriptSetPriority: "allow-oom",
	scriptCallbackFinish: "allow-oom", scriptResume: "allow-oom",
}

// onceScripts change what a caller must hear about and run once per call: each call carries a
// call key (queueKeys.call), and a call a client library sends again after a lost reply answers
// what the first answered (redisx.LibraryScript.Once). A repeated consume would otherwise lease
// jobs nobody receives, a repeated ack or nack answer "no such job" or "lease lost" to the
// caller whose call did it, a repeated publish of a job with a unique key name it a duplicate of
// itself, or queue it again once it was consumed and acked. publish_ready.lua and
// publish_batch.lua, the hot paths of jobs due now without a unique key, are not among them: a
// repeat finds its client-made ids stored and writes nothing (docs/reliability.md).
var onceScripts = map[scriptName]bool{
	scriptConsume: true, scriptConsumeCallbacks: true, scriptAck: true, scriptAckNoResult: true,
	scriptNack: true, scriptPublish: true,
}

// library is the queue's scripts, lib.lua's helpers first, built once per process: as functions
// of one Redis library and as EVALSHA scripts (redisx.Library).
var library = func() *redisx.Library {
	scripts := redisx.Scripts(scriptNames, scriptFlags)
	for i := range scripts {
		scripts[i].Bare = bareScripts[scriptName(scripts[i].Name)]
		scripts[i].Once = onceScripts[scriptName(scripts[i].Name)]
	}
	return redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
		Name: "sluice_queue",
		// rawget: reading a global Redis does not define (cmsgpack on a store without it) is an
		// error in Redis's script sandbox. Functions only load on Redis 7+, which has cmsgpack.
		EvalPrologue:     "bind(KEYS, ARGV, rawget(_G, 'cmsgpack'))",
		FunctionPrologue: "bind(KEYS, ARGV, cmsgpack)",
		Scripts:          scripts,
	})
}()
