package duework

import (
	"context"
	_ "embed" // the Lua of the mark and the helpers
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/mark.lua
var markLua string

//go:embed lua/helpers.lua
var helpersLua string

// LuaHelpers are the due index's Lua helpers (lua/helpers.lua: due_set), for a package to start
// its own helpers with (redisx.LibrarySpec.Helpers).
func LuaHelpers() string { return helpersLua }

// markScript names the script that marks a sweep complete in the libraries that hold it.
const markScript = "due_sweep_mark"

// MarkScript is the script that marks a sweep complete (lua/mark.lua), for a package to add to
// its own library (redisx.LibrarySpec.Scripts): it is flagged allow-oom, which only a function
// loaded before Redis filled up has, so it loads with the package's other scripts.
func MarkScript() redisx.LibraryScript {
	return redisx.LibraryScript{Name: markScript, Body: markLua, Flag: "allow-oom", Bare: true}
}

// Sweep walks a registry of things a page a pass, so that each is visited and its housekeeping
// indexes it: what a version of Sluice that did not keep the due index stored is found this way.
// It announces the slot of each thing it returns (Announce), and when the last page is read it
// marks the slots announced (MarkAnnounced) and the registry swept (a key with a lifetime,
// Registry.Every); it sweeps again once that mark lapses. The zero value is ready; it is safe for
// concurrent use.
type Sweep struct {
	mu     sync.Mutex
	cursor uint64 // where the sweep under way goes on (0: at the start)
}

// Scan reads one page of a registry from cursor (SSCAN, or ZSCAN's members): the names and the
// cursor of the next page, 0 after the last.
type Scan func(ctx context.Context, cursor uint64) ([]string, uint64, error)

// Registry is what a Sweep walks and the due index it fills.
type Registry struct {
	Scan    Scan                     // reads a page of the registry
	Mark    string                   // the key that marks the registry swept
	Every   time.Duration            // the lifetime of the mark
	Base    string                   // the due index (Key)
	Cluster bool                     // the index has a shard per hash slot
	KeyOf   func(name string) string // a key of the thing name, for its slot (Announce)
}

// Page returns the next page of the registry to visit, or nothing while its mark exists. scripts
// runs a library that holds MarkScript, on rdb.
func (s *Sweep) Page(ctx context.Context, rdb redis.UniversalClient, scripts *redisx.ScriptRunner, reg Registry) ([]string, error) {
	if n, err := rdb.Exists(ctx, reg.Mark).Result(); err != nil || n == 1 {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names, next, err := reg.Scan(ctx, s.cursor)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = reg.KeyOf(name)
	}
	if err := Announce(ctx, rdb, reg.Base, reg.Cluster, keys...); err != nil {
		return nil, err
	}
	s.cursor = next
	if next != 0 {
		return names, nil
	}
	if err := MarkAnnounced(ctx, rdb, reg.Base, reg.Cluster); err != nil {
		return nil, err
	}
	return names, scripts.Run(ctx, markScript, []string{reg.Mark}, reg.Every.Milliseconds()).Err()
}

// Union is the names of lists, each once, in the order first seen: what a pass visits when the
// due index, a sweep and other lists name the same thing.
func Union(lists ...[]string) []string {
	seen := make(map[string]bool)
	var out []string
	for _, l := range lists {
		for _, name := range l {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}
