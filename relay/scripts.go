package relay

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The endpoint scripts, one .lua file each, all starting with lua/lib.lua.
const (
	scriptSubmit           = "submit"
	scriptTake             = "take"
	scriptFinish           = "finish"
	scriptMaintain         = "maintain"
	scriptGet              = "get"
	scriptCancel           = "cancel"
	scriptPermit           = "permit"
	scriptStats            = "stats"
	scriptLate             = "late"
	scriptSlotTake         = "slot_take"
	scriptSlotFree         = "slot_release"
	scriptClaimCompletions = "completions_claim"
	scriptHandedOff        = "handed_off"
	scriptList             = "list"
)

var scriptNames = []string{
	scriptSubmit, scriptTake, scriptFinish, scriptMaintain, scriptGet, scriptCancel, scriptPermit, scriptStats, scriptLate,
	scriptSlotTake, scriptSlotFree, scriptClaimCompletions, scriptHandedOff, scriptList,
}

// The registry scripts (endpoint settings): rare calls on the registry's keys (hash tag {relay}),
// with KEYS and ARGV of their own, so they skip lib.lua's bind (Bare).
const (
	scriptEndpointSet     = "endpoint_set"
	scriptEndpointApplied = "endpoint_applied"
	scriptEndpointForget  = "endpoint_forget"
)

// functionFlags are the Redis function flags of the endpoint scripts. Without flags Redis refuses
// a function outright when memory is over maxmemory; stats and list only read (no-writes), and the calls
// that move tasks on, free slots or store what already happened (allow-oom) must work on a full
// Redis so it can drain. Submit and slot_take have no flag: a full Redis refuses new work.
var functionFlags = map[string]string{
	scriptStats: "no-writes", scriptList: "no-writes",
	scriptTake: "allow-oom", scriptFinish: "allow-oom", scriptMaintain: "allow-oom", scriptGet: "allow-oom",
	scriptCancel: "allow-oom", scriptPermit: "allow-oom", scriptLate: "allow-oom", scriptSlotFree: "allow-oom",
	scriptClaimCompletions: "allow-oom", scriptHandedOff: "allow-oom",
}

// onceScripts change what their caller must hear about, so each call runs once however often it
// reaches Redis (redisx.LibraryScript.Once: a call key with each call, the answer kept for a
// repeat). A repeated take would otherwise hold slots and lease tasks nobody dispatches until
// their lease ends; a repeated permit "use" would answer ErrPermitUsed to the permit's rightful
// caller; a repeated finish, submit, cancel or slot call would answer another outcome than the
// one that happened (docs/reliability.md).
var onceScripts = map[string]bool{
	scriptSubmit: true, scriptTake: true, scriptFinish: true, scriptCancel: true, scriptPermit: true,
	scriptSlotTake: true, scriptSlotFree: true,
}

// library is relay's scripts, lib.lua's helpers first, built once per process: as functions of
// one Redis library and as EVALSHA scripts (redisx.Library, as in package queue). The registry's
// scripts are allow-oom too: deleting an endpoint (or lowering its limits), the Clients'
// confirmations that a change applied, and forgetting a drained endpoint are how an operator
// drains a full Redis, and they store a few bytes.
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name:             "sluice_relay",
	Helpers:          duework.LuaHelpers(),
	EvalPrologue:     "bind(KEYS, ARGV)",
	FunctionPrologue: "bind(KEYS, ARGV)",
	Scripts: append(redisx.OnceScripts(redisx.Scripts(scriptNames, functionFlags), onceScripts),
		redisx.LibraryScript{Name: scriptEndpointSet, Flag: "allow-oom", Bare: true},
		redisx.LibraryScript{Name: scriptEndpointApplied, Flag: "allow-oom", Bare: true},
		redisx.LibraryScript{Name: scriptEndpointForget, Flag: "allow-oom", Bare: true},
		duework.MarkScript()),
})

// run runs an endpoint script with the common ARGV (lib.lua) followed by args: as a library
// function where Redis has FUNCTION, else with EVALSHA.
func (c *Client) run(ctx context.Context, name, endpoint string, args ...any) *redis.Cmd {
	return c.runWithKeys(ctx, name, endpoint, nil, args...)
}

// runWithKeys is run with more keys after the endpoint's (each under the endpoint's hash tag,
// built in keys.go): the script finds them after lib.lua's.
func (c *Client) runWithKeys(ctx context.Context, name, endpoint string, more []string, args ...any) *redis.Cmd {
	k := c.keys.get(endpoint)
	keys := k.all
	if len(more) > 0 {
		keys = append(keys[:len(keys):len(keys)], more...)
	}
	if onceScripts[name] {
		keys = redisx.OnceKeys(k.call(), keys)
	}
	argv := make([]any, 0, 7+len(args))
	argv = append(argv, c.ch.wake, c.ch.task, endpoint, c.finishedMs, c.readMs, c.cfg.ArchiveBacklog, c.archiving)
	argv = append(argv, args...)
	return c.scripts.Run(ctx, name, keys, argv...)
}

func ms(d interface{ Milliseconds() int64 }) int64 { return d.Milliseconds() }
