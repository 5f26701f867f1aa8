package cli

import (
	"context"
	"errors"
)

// registerServer adds `sluice server`. (Placeholder until the server lands.)
func registerServer(t map[string]command) {
	t["server"] = command{
		summary: "run the Sluice server",
		run: func(ctx context.Context, env *Env, args []string) error {
			return errors.New("not built yet")
		},
	}
}
