package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/sluicehq/sluice/server"
)

// registerServer adds `sluice server`.
func registerServer(t map[string]command) {
	t["server"] = command{summary: "run the Sluice server", run: runServer}
}

func runServer(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "server", "[flags]", `
Run the Sluice server: the native /v1 API and the lmstfy-compatible routes on the public
listener, namespaces, tokens and /metrics on the admin listener. It runs until interrupted, then
shuts down gracefully.

Settings come from a JSON config file (--config or SLUICE_CONFIG), then SLUICE_* environment
variables, then flags; each flag below names its variable and default. With no Redis URL the
server runs on an embedded Redis and prints a token and curl lines on its first start.

Examples:
  sluice server
  sluice server --redis-url redis://127.0.0.1:6379/0 --admin-token "$ADMIN_TOKEN"
  sluice server --config /etc/sluice/sluice.json`)
	configFile := fs.String("config", env.Getenv(server.ConfigFileEnv), "JSON config `file` (env "+server.ConfigFileEnv+")")
	opts := server.Options()
	values := make(map[string]*string, len(opts))
	for _, o := range opts {
		values[o.Key] = fs.String(o.Flag(), "", fmt.Sprintf("%s (env %s, default %s)", o.Usage, o.Env, o.Default))
	}
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		for _, o := range opts {
			if o.Flag() == f.Name {
				given[o.Key] = *values[o.Key]
			}
		}
	})
	settings, err := server.LoadSettings(server.SettingsSources{File: *configFile, Getenv: env.Getenv, Flags: given})
	if err != nil {
		return err
	}
	return server.RunSettings(ctx, settings, env.Getenv, env.Stderr)
}
